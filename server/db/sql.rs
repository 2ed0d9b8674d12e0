//! The one SQL surface both storage engines share. Every query in [`crate::db`] is written
//! once, in the subset SQLite and PostgreSQL agree on (`ON CONFLICT`, `RETURNING`,
//! `COALESCE`, casts of sums), with SQLite's `?N` placeholders; [`Tx`] runs it inside one
//! transaction on either engine, turning the placeholders into PostgreSQL's `$N` and the
//! values into the types each engine expects. Rows come back as [`Row`]s of [`Value`]s,
//! read with [`Row::get`], so the callers never see which engine answered.

use postgres::types::{ToSql, Type};

use super::DbError;

/// A value going into or coming out of a query.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// An integer (also booleans, stored as 0/1).
    Int(i64),
    /// A floating-point number.
    Real(f64),
    /// Text.
    Text(String),
}

/// Something that can be a query parameter.
pub trait ToValue {
    /// The value to bind.
    fn to_value(&self) -> Value;
}

macro_rules! int_to_value {
    ($($t:ty),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                Value::Int(i64::try_from(*self).unwrap_or(i64::MAX))
            }
        }
    )*};
}
int_to_value!(i64, i32, u32, u64, usize, u16, u8);

impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Int(i64::from(*self))
    }
}
impl ToValue for f64 {
    fn to_value(&self) -> Value {
        Value::Real(*self)
    }
}
impl ToValue for str {
    fn to_value(&self) -> Value {
        Value::Text(self.to_string())
    }
}
impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::Text(self.clone())
    }
}
impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}
impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToValue::to_value)
    }
}
impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}

/// Builds a parameter slice: `params![student, quiz_id, 3]`.
#[macro_export]
macro_rules! params {
    () => { &[] as &[&dyn $crate::db::sql::ToValue] };
    ($($p:expr),+ $(,)?) => { &[$(&$p as &dyn $crate::db::sql::ToValue),+] as &[&dyn $crate::db::sql::ToValue] };
}

/// Something a column can be read as.
pub trait FromValue: Sized {
    /// Converts, or says why not.
    fn from_value(value: &Value) -> Result<Self, String>;
}

impl FromValue for i64 {
    fn from_value(value: &Value) -> Result<Self, String> {
        match value {
            Value::Int(i) => Ok(*i),
            other => Err(format!("expected an integer, found {other:?}")),
        }
    }
}
macro_rules! narrow_from_value {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_value(value: &Value) -> Result<Self, String> {
                let wide = i64::from_value(value)?;
                <$t>::try_from(wide).map_err(|_| format!("{wide} is out of range"))
            }
        }
    )*};
}
narrow_from_value!(i32, u32, u64, usize);

impl FromValue for bool {
    fn from_value(value: &Value) -> Result<Self, String> {
        Ok(i64::from_value(value)? != 0)
    }
}
impl FromValue for f64 {
    fn from_value(value: &Value) -> Result<Self, String> {
        match value {
            Value::Real(f) => Ok(*f),
            #[allow(clippy::cast_precision_loss)]
            Value::Int(i) => Ok(*i as f64),
            other => Err(format!("expected a number, found {other:?}")),
        }
    }
}
impl FromValue for String {
    fn from_value(value: &Value) -> Result<Self, String> {
        match value {
            Value::Text(s) => Ok(s.clone()),
            other => Err(format!("expected text, found {other:?}")),
        }
    }
}
impl<T: FromValue> FromValue for Option<T> {
    fn from_value(value: &Value) -> Result<Self, String> {
        match value {
            Value::Null => Ok(None),
            other => T::from_value(other).map(Some),
        }
    }
}

/// One result row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row(pub Vec<Value>);

impl Row {
    /// Column `index`, converted.
    pub fn get<T: FromValue>(&self, index: usize) -> Result<T, DbError> {
        let value = self.0.get(index).unwrap_or(&Value::Null);
        T::from_value(value).map_err(|why| DbError::Column { index, why })
    }
}

/// Which engine a transaction runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// The embedded SQLite file.
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

/// One open transaction, on either engine. [`crate::db::Db::run`] commits it when the
/// closure returns `Ok`, and rolls it back otherwise.
pub enum Tx<'a> {
    /// A SQLite transaction.
    Sqlite(rusqlite::Transaction<'a>),
    /// A PostgreSQL transaction.
    Postgres(postgres::Transaction<'a>),
    /// A PostgreSQL connection outside a transaction: each statement commits by itself
    /// ([`crate::db::Db::run_one`], for a single statement in one round trip).
    PostgresStatement(&'a mut postgres::Client),
}

impl Tx<'_> {
    /// The engine.
    pub fn dialect(&self) -> Dialect {
        match self {
            Self::Sqlite(_) => Dialect::Sqlite,
            Self::Postgres(_) | Self::PostgresStatement(_) => Dialect::Postgres,
        }
    }

    /// Runs a statement; how many rows it changed.
    pub fn execute(&mut self, sql: &str, params: &[&dyn ToValue]) -> Result<usize, DbError> {
        match self {
            Self::Sqlite(tx) => {
                let values = sqlite_values(params);
                let mut statement = tx.prepare_cached(sql)?;
                Ok(statement.execute(rusqlite::params_from_iter(values))?)
            }
            Self::Postgres(tx) => {
                let values = pg_values(params);
                let changed = tx.execute_typed(&placeholders(sql), &pg_refs(&values))?;
                Ok(usize::try_from(changed).unwrap_or(usize::MAX))
            }
            Self::PostgresStatement(client) => {
                let values = pg_values(params);
                let changed = client.execute_typed(&placeholders(sql), &pg_refs(&values))?;
                Ok(usize::try_from(changed).unwrap_or(usize::MAX))
            }
        }
    }

    /// Runs a query; every row.
    pub fn query(&mut self, sql: &str, params: &[&dyn ToValue]) -> Result<Vec<Row>, DbError> {
        match self {
            Self::Sqlite(tx) => {
                let mut statement = tx.prepare_cached(sql)?;
                let columns = statement.column_count();
                let rows = statement.query_map(
                    rusqlite::params_from_iter(sqlite_values(params)),
                    |row| {
                        (0..columns)
                            .map(|i| row.get::<_, rusqlite::types::Value>(i).map(from_sqlite))
                            .collect::<Result<Vec<_>, _>>()
                            .map(Row)
                    },
                )?;
                Ok(rows.collect::<Result<Vec<_>, _>>()?)
            }
            Self::Postgres(tx) => {
                let values = pg_values(params);
                let rows = tx.query_typed(&placeholders(sql), &pg_refs(&values))?;
                rows.iter().map(from_pg_row).collect()
            }
            Self::PostgresStatement(client) => {
                let values = pg_values(params);
                let rows = client.query_typed(&placeholders(sql), &pg_refs(&values))?;
                rows.iter().map(from_pg_row).collect()
            }
        }
    }

    /// Runs a query that returns at most one row.
    pub fn query_opt(
        &mut self,
        sql: &str,
        params: &[&dyn ToValue],
    ) -> Result<Option<Row>, DbError> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// Runs a query that returns exactly one row.
    pub fn query_row(&mut self, sql: &str, params: &[&dyn ToValue]) -> Result<Row, DbError> {
        self.query_opt(sql, params)?.ok_or(DbError::NoRow)
    }

    /// Runs several statements with no parameters (schema changes).
    pub fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        match self {
            Self::Sqlite(tx) => Ok(tx.execute_batch(sql)?),
            Self::Postgres(tx) => Ok(tx.batch_execute(sql)?),
            Self::PostgresStatement(client) => Ok(client.batch_execute(sql)?),
        }
    }
}

fn sqlite_values(params: &[&dyn ToValue]) -> Vec<rusqlite::types::Value> {
    params
        .iter()
        .map(|p| match p.to_value() {
            Value::Null => rusqlite::types::Value::Null,
            Value::Int(i) => rusqlite::types::Value::Integer(i),
            Value::Real(f) => rusqlite::types::Value::Real(f),
            Value::Text(s) => rusqlite::types::Value::Text(s),
        })
        .collect()
}

fn from_sqlite(value: rusqlite::types::Value) -> Value {
    match value {
        rusqlite::types::Value::Null => Value::Null,
        rusqlite::types::Value::Integer(i) => Value::Int(i),
        rusqlite::types::Value::Real(f) => Value::Real(f),
        rusqlite::types::Value::Text(s) => Value::Text(s),
        rusqlite::types::Value::Blob(b) => Value::Text(String::from_utf8_lossy(&b).into_owned()),
    }
}

/// A parameter for PostgreSQL, with the type it is sent as (a NULL is sent untyped, so
/// the server infers it from where it goes).
type PgValue = (Box<dyn ToSql + Sync>, Type);

fn pg_values(params: &[&dyn ToValue]) -> Vec<PgValue> {
    params
        .iter()
        .map(|p| -> PgValue {
            match p.to_value() {
                Value::Null => (Box::new(None::<String>), Type::UNKNOWN),
                Value::Int(i) => (Box::new(i), Type::INT8),
                Value::Real(f) => (Box::new(f), Type::FLOAT8),
                Value::Text(s) => (Box::new(s), Type::TEXT),
            }
        })
        .collect()
}

fn pg_refs(values: &[PgValue]) -> Vec<(&(dyn ToSql + Sync), Type)> {
    values
        .iter()
        .map(|(v, t)| (v.as_ref(), t.clone()))
        .collect()
}

fn from_pg_row(row: &postgres::Row) -> Result<Row, DbError> {
    let mut values = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let ty = column.type_();
        let value = if *ty == Type::INT8 {
            row.try_get::<_, Option<i64>>(i)?.map(Value::Int)
        } else if *ty == Type::INT4 {
            row.try_get::<_, Option<i32>>(i)?
                .map(|v| Value::Int(v.into()))
        } else if *ty == Type::INT2 {
            row.try_get::<_, Option<i16>>(i)?
                .map(|v| Value::Int(v.into()))
        } else if *ty == Type::BOOL {
            row.try_get::<_, Option<bool>>(i)?
                .map(|v| Value::Int(v.into()))
        } else if *ty == Type::FLOAT8 {
            row.try_get::<_, Option<f64>>(i)?.map(Value::Real)
        } else if *ty == Type::FLOAT4 {
            row.try_get::<_, Option<f32>>(i)?
                .map(|v| Value::Real(v.into()))
        } else if [Type::TEXT, Type::VARCHAR, Type::BPCHAR, Type::NAME].contains(ty) {
            row.try_get::<_, Option<String>>(i)?.map(Value::Text)
        } else {
            return Err(DbError::Column {
                index: i,
                why: format!("PostgreSQL type {ty} is not read here; cast it in the query"),
            });
        };
        values.push(value.unwrap_or(Value::Null));
    }
    Ok(Row(values))
}

/// Rewrites SQLite's `?N` and `?` placeholders as PostgreSQL's `$N` (outside quotes).
pub fn placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let (mut quoted, mut next) = (false, 1);
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            quoted = !quoted;
        }
        if c != '?' || quoted {
            out.push(c);
            continue;
        }
        let mut digits = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        if digits.is_empty() {
            digits = next.to_string();
            next += 1;
        }
        out.push('$');
        out.push_str(&digits);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_dollars_outside_quotes() {
        assert_eq!(
            placeholders("SELECT a FROM t WHERE b = ?2 AND c = ?1 AND d = '?3'"),
            "SELECT a FROM t WHERE b = $2 AND c = $1 AND d = '?3'"
        );
        assert_eq!(placeholders("VALUES (?, ?)"), "VALUES ($1, $2)");
    }

    #[test]
    fn rows_convert_or_say_why() {
        let row = Row(vec![Value::Int(3), Value::Null, Value::Text("x".into())]);
        assert_eq!(row.get::<u32>(0).unwrap(), 3);
        assert!((row.get::<f64>(0).unwrap() - 3.0).abs() < f64::EPSILON);
        assert_eq!(row.get::<Option<String>>(1).unwrap(), None);
        assert!(row.get::<i64>(2).is_err());
        assert!(
            row.get::<u32>(9).is_err(),
            "a missing column is NULL, not a number"
        );
    }
}
