//! The databases reapcheck runs scenarios on.

use std::fmt;

/// A database target. Each gets its server from `REAPCHECK_<TARGET>_URL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// Embedded SQLite, the default.
    Sqlite,
    /// PostgreSQL.
    Postgres,
    /// MariaDB, through the `mysql` dialect.
    Mariadb,
    /// Oracle's MySQL, through the `mysql` dialect.
    Mysql,
    /// CockroachDB, through the `cockroach` dialect and the PostgreSQL protocol.
    Cockroach,
    /// Microsoft SQL Server, through the `mssql` dialect and tiberius.
    Mssql,
}

impl Target {
    /// Every target, in report order.
    pub const ALL: [Target; 6] =
        [Target::Sqlite, Target::Postgres, Target::Mariadb, Target::Mysql, Target::Cockroach, Target::Mssql];

    /// The name used on the command line, in reports and in `divergence`.
    pub fn name(self) -> &'static str {
        match self {
            Target::Sqlite => "sqlite",
            Target::Postgres => "postgres",
            Target::Mariadb => "mariadb",
            Target::Mysql => "mysql",
            Target::Cockroach => "cockroach",
            Target::Mssql => "mssql",
        }
    }

    /// The target called `name`.
    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The folder below `dialects/` whose SQL this target runs.
    pub fn dialect(self) -> &'static str {
        match self {
            Target::Sqlite => "sqlite",
            Target::Postgres => "postgres",
            Target::Mariadb | Target::Mysql => "mysql",
            Target::Cockroach => "cockroach",
            Target::Mssql => "mssql",
        }
    }

    /// The environment variable that holds the target's URL.
    pub fn url_variable(self) -> String {
        format!("REAPCHECK_{}_URL", self.name().to_uppercase())
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
