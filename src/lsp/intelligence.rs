pub struct Intelligence;
