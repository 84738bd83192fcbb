//! The text under each subcommand's `--help`: examples, the environment
//! variables it reads, and its exit codes. A test checks every subcommand
//! shows all three.

/// Variables every command that reads scenarios or dialects honours.
macro_rules! inputs_env {
    () => {
        "  REAPCHECK_SCENARIOS   scenario sets when --scenarios is not given (`builtin`, folders)\n  \
         REAPCHECK_DIALECTS    dialects folder when --dialects is not given (`builtin`: the SQL inside reapcheck)\n"
    };
}

/// Variables naming each target's server.
macro_rules! url_env {
    () => {
        "  REAPCHECK_POSTGRES_URL, REAPCHECK_MARIADB_URL, REAPCHECK_MYSQL_URL,\n  \
         REAPCHECK_COCKROACH_URL, REAPCHECK_MSSQL_URL\n                        \
         each target's server (passwords are never printed); sqlite is embedded\n"
    };
}

/// Where settings come from, in order.
macro_rules! order {
    () => {
        "Settings resolve in one order: flag, then environment variable, then reapcheck.toml\n\
         (found in this folder or the nearest one above), then default.\n"
    };
}

/// `run`.
pub const RUN: &str = concat!(
    "Examples:\n  \
     reapcheck run                                   # the project's targets (default: sqlite) and scenarios\n  \
     reapcheck run grace/                            # only scenarios whose name contains grace/\n  \
     reapcheck run --db sqlite,postgres,mariadb      # each named target must be reachable\n  \
     reapcheck run --db all --report reports         # what can be reached; lists what was skipped\n  \
     reapcheck run --accept --exact grace/floor      # write a missing snapshot\n  \
     reapcheck run --accept --force --exact grace/floor   # replace a snapshot that differs\n\n",
    order!(),
    "\nEnvironment:\n  \
     REAPCHECK_DB          targets when --db is not given\n  \
     REAPCHECK_REQUIRE     targets that must run (a skip fails) when --require is not given\n",
    inputs_env!(),
    url_env!(),
    "  CI                    `true`: a scenario without a committed snapshot fails\n\n\
     Exit codes:\n  \
     0  every case passed on the model and on every target that had to run\n  \
     1  a case failed, a named or required target could not run, or coverage fell short\n  \
     2  invalid input (scenario, dialect, reapcheck.toml, flag or variable); nothing ran\n"
);

/// `list --help` after its options.
pub const LIST: &str = concat!(
    "Examples:\n  \
     reapcheck list                                  # every scenario of the project's sets, with its file\n  \
     reapcheck list grace/                           # only names containing grace/\n  \
     reapcheck list --print --exact grace/floor-keeps-recent-beat   # a builtin scenario's text\n\n",
    order!(),
    "\nEnvironment:\n",
    inputs_env!(),
    "\nExit codes:\n  \
     0  at least one scenario listed\n  \
     2  none matches, or a scenario set cannot be read\n"
);

/// `check`.
pub const CHECK: &str = concat!(
    "Examples:\n  \
     reapcheck check                                 # the project's scenarios and dialects\n  \
     reapcheck check --dialects my-port              # lint a port, and prove its namespace scripts\n  \
     reapcheck check --offline                       # validate only: connect to no server\n\n",
    order!(),
    "\nEnvironment:\n",
    inputs_env!(),
    "  REAPCHECK_<TARGET>_URL  a server to prove the namespace scripts on (sqlite always; no URL: not checked)\n",
    "\nExit codes:\n  \
     0  every scenario and dialect is valid, and every target reached ran the namespace scripts as they must\n  \
     1  a namespace script failed or did not do its job on a target (the script and its file:line named)\n  \
     2  something is invalid (each problem with file:line:column), or the dialects folder is missing or empty\n"
);

/// `explain`.
pub const EXPLAIN: &str = concat!(
    "Examples:\n  \
     reapcheck explain grace/never-beat              # the model's reasoning, step by step\n  \
     reapcheck explain scenarios/x.yaml --db sqlite  # with the target's SQL under each step\n\n",
    order!(),
    "\nEnvironment:\n",
    inputs_env!(),
    url_env!(),
    "\nExit codes:\n  \
     0  explained (and, with --db, the target agreed with the model)\n  \
     1  with --db, the target parts from the model\n  \
     2  no such scenario, or invalid input\n"
);

/// `mutate`.
pub const MUTATE: &str = concat!(
    "Examples:\n  \
     reapcheck mutate --db sqlite                    # every mutant must be killed\n  \
     reapcheck mutate --db postgres --list           # ids and hashes, for equivalent-mutants.yaml\n\n",
    order!(),
    "\nEnvironment:\n  \
     REAPCHECK_REQUIRE     targets whose skip is a failure\n",
    inputs_env!(),
    url_env!(),
    "\nExit codes:\n  \
     0  every mutant not declared equivalent was killed\n  \
     1  a mutant survived, the unmutated SQL failed, or a target could not run\n  \
     2  invalid input, or a stale equivalence declaration\n"
);

/// `bench`.
pub const BENCH: &str = concat!(
    "Examples:\n  \
     reapcheck bench --db sqlite                     # setup, run, teardown per scenario run\n  \
     reapcheck bench --db sqlite,postgres\n  \
     reapcheck bench --scale --db postgres           # the reaper's scan at 10k, 100k, 1M rows, with plans\n  \
     reapcheck bench --scale --db sqlite --sizes 10000,100000 --processing 1000 --stale 100\n  \
     reapcheck bench --compare --db sqlite,postgres --rounds 5   # run against the database's own client\n  \
     reapcheck bench --compare --adapter --db sqlite  # the reference adapter against SQL mode\n\n",
    order!(),
    "\nEnvironment:\n  \
     REAPCHECK_REQUIRE     targets whose skip is a failure\n",
    inputs_env!(),
    url_env!(),
    "\nExit codes:\n  \
     0  measured (--scale: no plan line flagged, growth within the goal)\n  \
     1  a run failed or a target could not run; --scale: a flagged plan line\n     \
     or a growth ratio over the goal\n  \
     2  invalid input; --compare: also a client that cannot start or cannot reach its server\n"
);

/// `fuzz`.
pub const FUZZ: &str = concat!(
    "Examples:\n  \
     reapcheck fuzz --db sqlite --cases 2000         # a random seed, printed first\n  \
     reapcheck fuzz --db postgres --cases 600 --seed 20261130\n\n",
    "Environment:\n  \
     REAPCHECK_REQUIRE     targets whose skip is a failure\n",
    url_env!(),
    "\nExit codes:\n  \
     0  every target agreed with the model on every case\n  \
     1  a difference (shrunk and saved as a scenario), an unreachable target, or no target ran\n  \
     2  invalid arguments\n"
);

/// `init`.
pub const INIT: &str = concat!(
    "Examples:\n  \
     reapcheck init                                  # config, example regression, CI workflow\n  \
     reapcheck init --from postgres,mysql            # also copy those dialects to port\n  \
     reapcheck init --from postgres --force          # overwrite files that exist\n  \
     reapcheck init --add mysql                      # later: port one more dialect, nothing else touched\n\n",
    "Environment:\n  \
     none: init reads no variable\n\n\
     Exit codes:\n  \
     0  every file written\n  \
     2  a file exists (nothing written; give --force), or --from names an unknown dialect\n"
);

/// `verdict`.
pub const VERDICT: &str = "Examples:\n  \
     reapcheck verdict reports/* --expect sqlite,postgres,mariadb   # CI legs' report folders\n  \
     reapcheck verdict legs --out reports/matrix     # every leg one folder below legs/\n\n\
     Environment:\n  \
     none: verdict reads only the outcome files (outcomes.json) it is given\n\n\
     Exit codes:\n  \
     0  every expected leg ran, nothing failed, and the databases agree\n  \
     1  a leg is missing, ran nothing, was interrupted, ran another corpus or version,\n     \
     a case failed, or two databases disagree without a declared divergence\n  \
     2  invalid input: an unreadable outcome file, another schema version, a bad flag\n";

/// `race`.
pub const RACE: &str = concat!(
    "Examples:\n  \
     reapcheck race --db sqlite,postgres,mariadb --seconds 30\n  \
     reapcheck race --db postgres --seconds 10 --workers 16 --reapers 4 --seed 7\n  \
     reapcheck race --db sqlite --dialects my-port --seconds 10   # your own SQL\n\n",
    order!(),
    "\nEnvironment:\n",
    inputs_env!(),
    url_env!(),
    "                        servers on this machine (loopback) only\n\n\
     Exit codes:\n  \
     0  every target ran and its history broke no rule\n  \
     1  a rule was broken, a statement failed, a target could not run, or nothing ran\n  \
     2  invalid input (a bound out of range, a server not on this machine, a bad flag)\n"
);

/// `adapter serve`.
pub const ADAPTER_SERVE: &str = concat!(
    "Reads request lines on stdin and writes one reply line per request on stdout\n\
     (docs/adapter-protocol.md); logs go to stderr. Name it as an adapter's command in\n\
     reapcheck.toml, or check it with `reapcheck adapter check`.\n\n\
     Examples:\n  \
     reapcheck adapter serve --db sqlite             # the embedded SQLite dialect\n  \
     reapcheck adapter serve --db postgres --dialects my-port   # your port's SQL\n  \
     reapcheck adapter check -- reapcheck adapter serve --db sqlite\n\n",
    order!(),
    "\nEnvironment:\n  \
     REAPCHECK_DIALECTS    dialects folder when --dialects is not given (`builtin`: the SQL inside reapcheck)\n",
    url_env!(),
    "                        used when a setup request names no database\n\n\
     Exit codes:\n  \
     0  stdin ended (every request was answered, errors included)\n  \
     1  stdin or stdout failed\n  \
     2  invalid input (target, dialect, reapcheck.toml, flag); nothing was served\n"
);

/// `adapter check`.
pub const ADAPTER_CHECK: &str = "Starts CMD, sends it a short fixed script (handshake, setup of a one-job scenario on\n\
     SQLite, clock, claim, heartbeat, clock, reap, complete, read, teardown), prints each\n\
     exchange as `> request` / `< reply`, and validates every reply: JSON, the protocol's\n\
     schema (docs/adapter-protocol/reply.schema.json), the seq rule, and reapcheck's decoding.\n\n\
     Examples:\n  \
     reapcheck adapter check -- python3 examples/adapters/saq/adapter.py\n  \
     reapcheck adapter check --timeout-seconds 30 -- ./adapter.sh --verbose\n  \
     reapcheck adapter check -- reapcheck adapter serve --db sqlite\n\n\
     Environment:\n  \
     none: the adapter runs with reapcheck's environment and TZ=UTC\n\n\
     Exit codes:\n  \
     0  every reply holds to the protocol\n  \
     1  a reply breaks it (the first violation is printed with its line), the adapter\n     \
     hung past --timeout-seconds, exited, or could not start\n  \
     2  invalid arguments\n";
