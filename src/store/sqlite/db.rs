//! A connection and how its statements are prepared (issue 13).
//!
//! Reader connections use rusqlite's statement cache: a connection moves between reader
//! lanes, and a prepared [`Statement`] borrows its connection, so it cannot move with it.
//! The writer's connection never leaves the writer thread, so the writer keeps its
//! statements prepared for the connection's life, each found by what it is ([`Fixed`], a
//! listing's [`Shape`]), not by its text. rusqlite's cache trims and hashes a statement's
//! whole text twice per use and allocates a key for it (~16% of the writer's instructions
//! under 32 reviewers, three to four statements per write).

use super::{Shape, SAVE_CAS_OVER_SQL, SAVE_CAS_SQL, SAVE_CREATE_SQL, SAVE_UPSERT_SQL};
use rusqlite::{CachedStatement, Connection, Statement};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::ops::{Deref, DerefMut};

/// The statements whose text never changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fixed {
    SaveCreate,
    SaveCas,
    /// [`Fixed::SaveCas`] over a remembered write (its value text compared too).
    SaveCasOver,
    SaveUpsert,
    /// A replaced row's creation time, by key.
    CreatedAt,
    Load,
    Delete,
    Begin,
    Commit,
}

impl Fixed {
    /// How many there are (`Commit` stays the last).
    const COUNT: usize = Fixed::Commit as usize + 1;

    fn text(self) -> &'static str {
        match self {
            Fixed::SaveCreate => &SAVE_CREATE_SQL,
            Fixed::SaveCas => SAVE_CAS_SQL,
            Fixed::SaveCasOver => SAVE_CAS_OVER_SQL,
            Fixed::SaveUpsert => &SAVE_UPSERT_SQL,
            Fixed::CreatedAt => {
                "SELECT created_at FROM prism_checkpoints
                 WHERE namespace = ?1 AND key = ?2 AND owner_key = ?3"
            }
            Fixed::Load => &super::LOAD_SQL,
            Fixed::Delete => {
                "DELETE FROM prism_checkpoints WHERE namespace = ?1 AND key = ?2 AND owner_key = ?3
                   AND (?4 IS NULL OR version = ?4)"
            }
            Fixed::Begin => "BEGIN IMMEDIATE",
            Fixed::Commit => "COMMIT",
        }
    }
}

/// The statements the writer prepared on its connection, kept until it closes (dropped
/// before it: a connection with unfinalized statements does not close).
#[derive(Default)]
pub(super) struct Kept<'c> {
    fixed: [Option<Statement<'c>>; Fixed::COUNT],
    listings: HashMap<Shape, Statement<'c>>,
}

/// A connection as the statement functions use it: its statements kept ([`Kept`]: the
/// writer's) or cached by rusqlite (the readers').
pub(super) struct Db<'s, 'c> {
    conn: &'c Connection,
    kept: Option<&'s mut Kept<'c>>,
}

/// A prepared statement, from either place; reset after each use by rusqlite (`execute`,
/// and a query's rows when dropped), rebound in full before the next.
pub(super) enum Held<'s, 'c> {
    Cached(CachedStatement<'c>),
    Kept(&'s mut Statement<'c>),
}

impl<'c> Deref for Held<'_, 'c> {
    type Target = Statement<'c>;
    fn deref(&self) -> &Statement<'c> {
        match self {
            Held::Cached(s) => s,
            Held::Kept(s) => s,
        }
    }
}

impl DerefMut for Held<'_, '_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            Held::Cached(s) => s,
            Held::Kept(s) => s,
        }
    }
}

impl<'s, 'c> Db<'s, 'c> {
    /// A reader's connection: statements from rusqlite's cache.
    pub(super) fn cached(conn: &'c Connection) -> Self {
        Self { conn, kept: None }
    }

    /// The writer's connection and its kept statements.
    pub(super) fn kept(conn: &'c Connection, kept: &'s mut Kept<'c>) -> Self {
        Self {
            conn,
            kept: Some(kept),
        }
    }

    pub(super) fn conn(&self) -> &'c Connection {
        self.conn
    }

    /// The statement `which`, prepared on first use.
    pub(super) fn fixed(&mut self, which: Fixed) -> rusqlite::Result<Held<'_, 'c>> {
        let conn = self.conn;
        match self.kept.as_deref_mut() {
            None => conn.prepare_cached(which.text()).map(Held::Cached),
            Some(kept) => match kept.fixed.get_mut(which as usize) {
                None => conn.prepare_cached(which.text()).map(Held::Cached),
                Some(slot) => {
                    let stmt = match slot.take() {
                        Some(s) => s,
                        None => conn.prepare(which.text())?,
                    };
                    Ok(Held::Kept(slot.insert(stmt)))
                }
            },
        }
    }

    /// The listing statement of `shape` (its text `sql`), prepared on first use.
    pub(super) fn listing(&mut self, shape: Shape, sql: &str) -> rusqlite::Result<Held<'_, 'c>> {
        let conn = self.conn;
        match self.kept.as_deref_mut() {
            None => conn.prepare_cached(sql).map(Held::Cached),
            Some(kept) => match kept.listings.entry(shape) {
                Entry::Occupied(e) => Ok(Held::Kept(e.into_mut())),
                Entry::Vacant(v) => Ok(Held::Kept(v.insert(conn.prepare(sql)?))),
            },
        }
    }

    /// Run the statement `which` once, without parameters.
    pub(super) fn run(&mut self, which: Fixed) -> rusqlite::Result<()> {
        self.fixed(which)?.execute([]).map(|_| ())
    }
}
