//! Every scenario serializes back to YAML that parses to an equal scenario,
//! so generated scenarios can be saved as files.

use std::path::Path;

use reapcheck::scenario::{Scenario, discover, parse_text};

fn roundtrip(text: &str) -> (Scenario, Scenario, String) {
    let first = parse_text(text).unwrap_or_else(|(p, m)| panic!("{p:?}: {m}"));
    let yaml = serde_saphyr::to_string(&first).expect("scenarios serialize");
    let second = parse_text(&yaml).unwrap_or_else(|(p, m)| panic!("re-parse at {p:?}: {m}\n{yaml}"));
    (first, second, yaml)
}

#[test]
fn every_committed_scenario_round_trips() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let files = discover(&root).unwrap();
    assert!(files.len() >= 10, "only {} scenario files", files.len());
    for (name, path) in files {
        let (first, second, yaml) = roundtrip(&std::fs::read_to_string(&path).unwrap());
        assert_eq!(first, second, "{name} changed on its way through:\n{yaml}");
    }
}

#[test]
fn every_step_form_and_optional_key_round_trips() {
    let text = r#"
description: all the forms
now: 2026-03-08T07:30:00.5Z
settings: { heartbeat_grace: 5 }
schema: standard
session_time_zone: "+05:30"
classes:
  C: { timeout: 30, idempotent: false, heartbeat_grace: 0, max_retries: 1, base_delay: 3, max_delay: 9, exclusive: true, concurrency_key: k, loadable: false }
jobs:
  - { id: a, class: C, queue: q, status: processing, attempts: 2, max_retries: 5, claim_timeout: null, claimed: -1m, heartbeat: 2026-03-08T07:29:00Z, run_at: +0.000001s, concurrency_key: j }
  - { id: b, class: C, claim_timeout: 60 }
leases:
  - { name: "key:k", owner: other/1, expires: +12.5s }
steps:
  - reap
  - reap: { timeout: 0, queues: [q] }
  - scan
  - scan: { reaper: r2, timeout: 60, queues: [q, default] }
  - apply
  - apply: { reaper: r2 }
  - claim: b
  - claim: { job: b, as: second }
  - heartbeat: a
  - heartbeat: { job: a, attempt: a/1 }
  - complete: { job: b, attempt: second }
  - fail: a
  - advance: 1h30m
  - set: { heartbeat_grace: 0 }
expect:
  steps: [ { reap: 0 }, null, { scan: [] }, null, null, null, { claim: claimed }, null, null, null, { complete: ok, lease_lost: true }, null, null, null ]
  jobs:
    a: { status: failed, claim_token: null, heartbeat_at: null, failed_at: 0s }
  leases:
    "key:k": { owner: other/1 }
  on_failure: [ { job: a, attempt: 3, final: true, error: failed } ]
divergence:
  mssql: a reason
"#;
    let (first, second, yaml) = roundtrip(text);
    assert_eq!(first, second, "{yaml}");
    assert!(yaml.contains("claim_timeout: null"), "an explicit null survives: {yaml}");
}
