//! artifacts: see the issue for this area.
