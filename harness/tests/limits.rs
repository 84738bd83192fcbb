//! `check` and `run` refuse what a target cannot hold and what would pass
//! the scenario limits, at `file:line:column`, and `check` on an empty
//! folder exits 2 as `run` does (issue 24; docs/scenario-format.md, "Limits").

mod common;

use common::{Scratch, clean_run, stderr, stdout};

const LONG_LEASE: &str = "description: a lease name over MariaDB's 255 bytes\nclasses: { C: { exclusive: true } }\njobs:\n  - { id: a, class: C, concurrency_key: KEY }\nsteps: [ { claim: a } ]\n";

#[test]
fn check_on_an_empty_folder_exits_2_like_run() {
    let dir = Scratch::new("limits", "empty");
    std::fs::create_dir(dir.path("scenarios")).unwrap();
    let out = clean_run(&dir.0, &["check", "--scenarios", "scenarios"]);
    assert_eq!(out.status.code(), Some(2), "{}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("nothing would run"), "{}", stderr(&out));
    let out = clean_run(&dir.0, &["run", "--scenarios", "scenarios"]);
    assert_eq!(out.status.code(), Some(2), "{}{}", stdout(&out), stderr(&out));
}

#[test]
fn a_300_byte_lease_name_is_refused_for_mariadb_by_check_and_run() {
    let dir = Scratch::new("limits", "lease");
    std::fs::create_dir(dir.path("scenarios")).unwrap();
    std::fs::write(dir.path("scenarios/long-key.yaml"), LONG_LEASE.replace("KEY", &"k".repeat(296))).unwrap();
    let out = clean_run(&dir.0, &["check", "--scenarios", "scenarios"]);
    assert_eq!(out.status.code(), Some(2), "{}{}", stdout(&out), stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("long-key.yaml:4:11: outside mariadb's limits: the lease name `key:kkk"), "{err}");
    assert!(err.contains("has 300 bytes, more than job_leases.name holds (255, VARBINARY(255)"), "{err}");
    assert!(err.contains("outside mysql's limits"), "{err}");
    assert!(!err.contains("outside sqlite's limits") && !err.contains("outside postgres's limits"), "{err}");
    // `run` refuses it for mariadb before anything runs; sqlite holds it.
    let out = clean_run(&dir.0, &["run", "--db", "mariadb", "--scenarios", "scenarios"]);
    assert_eq!(out.status.code(), Some(2), "{}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("outside mariadb's limits"), "{}", stderr(&out));
    assert!(!stdout(&out).contains("passed"), "{}", stdout(&out));
}

#[test]
fn rows_and_steps_over_the_limits_are_refused_at_their_place() {
    let dir = Scratch::new("limits", "rows");
    std::fs::create_dir(dir.path("scenarios")).unwrap();
    let mut text = "description: x\nclasses: { C: {} }\njobs:\n  - { id: j, count: 10000, class: C }\n  - { id: k, class: C }\nsteps:\n".to_owned();
    text.push_str(&"  - reap\n".repeat(2_001));
    std::fs::write(dir.path("scenarios/big.yaml"), text).unwrap();
    let out = clean_run(&dir.0, &["check", "--scenarios", "scenarios"]);
    assert_eq!(out.status.code(), Some(2), "{}{}", stdout(&out), stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("big.yaml:5:11: the jobs have 10001 rows, more than the 10000"), "{err}");
    assert!(err.contains("big.yaml:2007:5: the scenario has 2001 steps, more than the 2000"), "{err}");
    assert!(err.contains("the run's checkpoints would hold about"), "{err}");
}
