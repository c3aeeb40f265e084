//! One PostgreSQL connection with its prepared statements, and the small vocabulary the backend
//! speaks through it (`exec`, `rows`, `opt`, `one`). A statement is prepared once per
//! connection and kept: each query after the first is one round trip.

use super::text::with_holdable;
use crate::error::{StoreError, StoreResult};
use postgres::types::{FromSql, ToSql};
use postgres::{Client, Row, Statement};
use std::collections::HashMap;

/// A query's parameters.
pub(super) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// A connection and the statements prepared on it.
pub(crate) struct Conn {
    client: Client,
    statements: HashMap<String, Statement>,
    /// The threads the transaction under way wrote to (the writer's connection), for the
    /// notice of its commit.
    touched: Vec<String>,
}

impl Conn {
    pub(super) fn new(client: Client) -> Self {
        Self {
            client,
            statements: HashMap::new(),
            touched: Vec::new(),
        }
    }

    /// Whether the server closed the connection (it is then replaced).
    pub(super) fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    fn statement(&mut self, sql: &str) -> StoreResult<Statement> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).map_err(pg)?;
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    /// Notes that the transaction under way writes to `thread`.
    pub(super) fn touch(&mut self, thread: &str) {
        if !self.touched.iter().any(|t| t == thread) {
            self.touched.push(thread.to_owned());
        }
    }

    /// The threads noted since this was last called.
    pub(super) fn take_touched(&mut self) -> Vec<String> {
        std::mem::take(&mut self.touched)
    }

    /// Waits up to `patience` for notifications of the channels this connection listens to;
    /// each one's channel and payload.
    pub(super) fn notifications(
        &mut self,
        patience: std::time::Duration,
    ) -> StoreResult<Vec<(String, String)>> {
        use postgres::fallible_iterator::FallibleIterator as _;
        let mut arrived = self.client.notifications();
        let Some(first) = arrived.timeout_iter(patience).next().map_err(pg)? else {
            return Ok(Vec::new());
        };
        let heard = |n: &postgres::Notification| (n.channel().to_owned(), n.payload().to_owned());
        // Those that came with it are taken without waiting.
        let mut notices = vec![heard(&first)];
        let mut more = arrived.iter();
        while let Some(next) = more.next().map_err(pg)? {
            notices.push(heard(&next));
        }
        Ok(notices)
    }

    /// Runs statements that take no parameters, in one round trip, and returns the first
    /// column of the first row any of them returned, as text.
    pub(super) fn simple_value(&mut self, sql: &str) -> StoreResult<String> {
        self.client
            .simple_query(sql)
            .map_err(pg)?
            .into_iter()
            .find_map(|message| match message {
                postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
                _ => None,
            })
            .ok_or_else(|| StoreError::Corrupt(format!("no value came back from {sql}")))
    }

    /// Runs statements that take no parameters and return nothing (`BEGIN`, `COMMIT`, DDL).
    pub(super) fn batch(&mut self, sql: &str) -> StoreResult<()> {
        self.client.batch_execute(sql).map_err(pg)
    }

    /// Runs a statement; how many rows it changed.
    pub(super) fn exec(&mut self, sql: &str, params: Params<'_>) -> StoreResult<u64> {
        let statement = self.statement(sql)?;
        let client = &mut self.client;
        with_holdable(params, |params| client.execute(&statement, params)).map_err(pg)
    }

    /// Every row of a query.
    pub(super) fn rows(&mut self, sql: &str, params: Params<'_>) -> StoreResult<Vec<Row>> {
        let statement = self.statement(sql)?;
        let client = &mut self.client;
        with_holdable(params, |params| client.query(&statement, params)).map_err(pg)
    }

    /// The row of a query that returns at most one.
    pub(super) fn opt(&mut self, sql: &str, params: Params<'_>) -> StoreResult<Option<Row>> {
        let statement = self.statement(sql)?;
        let client = &mut self.client;
        with_holdable(params, |params| client.query_opt(&statement, params)).map_err(pg)
    }

    /// The row of a query that returns exactly one.
    pub(super) fn one(&mut self, sql: &str, params: Params<'_>) -> StoreResult<Row> {
        let statement = self.statement(sql)?;
        let client = &mut self.client;
        with_holdable(params, |params| client.query_one(&statement, params)).map_err(pg)
    }

    /// A query with parameters only known at run time (a page's filters): prepared each time.
    pub(super) fn rows_dynamic(
        &mut self,
        sql: &str,
        params: &[Box<dyn ToSql + Sync>],
    ) -> StoreResult<Vec<Row>> {
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        let client = &mut self.client;
        with_holdable(&refs, |params| client.query(sql, params)).map_err(pg)
    }
}

/// Column `i` of `row`, or [`StoreError::Corrupt`] when it does not hold a `T`.
pub(super) fn col<'a, T: FromSql<'a>>(row: &'a Row, i: usize) -> StoreResult<T> {
    row.try_get(i)
        .map_err(|e| StoreError::Corrupt(format!("column {i}: {e}")))
}

/// A PostgreSQL error as the store reports it.
pub(crate) fn pg(e: postgres::Error) -> StoreError {
    StoreError::Backend(Box::new(e))
}
