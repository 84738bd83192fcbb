# frozen_string_literal: true

# A hand-run smoke test of adapter.rb on one database, without reapcheck:
#   ruby smoke.rb sqlite
#   ruby smoke.rb postgres postgres://postgres@127.0.0.1:5432/test
#   ruby smoke.rb mariadb mysql://root@127.0.0.1:3306/test
# It plays one small scenario and checks each reply; exit 1 at the first
# reply that differs from what delayed_job should do.

require "json"
require "open3"

target, url = ARGV
abort "usage: ruby smoke.rb sqlite|postgres|mariadb [URL]" unless %w[sqlite postgres mariadb].include?(target)
database = target == "sqlite" ? nil : { "target" => target, "url" => url }
ns = "rc_smoke_#{Process.pid}"
cls = { "timeout" => 300, "idempotent" => true, "heartbeat_grace" => nil, "max_retries" => 2, "base_delay" => 2,
        "max_delay" => 3600, "exclusive" => false, "concurrency_key" => nil, "loadable" => true }
job = lambda do |id, status, attempts, updated, token = nil|
  { "id" => id, "class" => "Report", "queue" => "default", "status" => status, "attempts" => attempts,
    "max_retries" => 2, "claim_timeout" => status == "processing" ? 300 : nil, "claim_token" => token,
    "concurrency_key" => nil, "heartbeat_at" => nil, "run_at" => "2026-01-15T11:00:00.000000Z", "updated_at" => updated }
end
setup = {
  "op" => "setup", "scenario" => "smoke", "namespace" => ns, "database" => database,
  "now" => "2026-01-15T12:00:00.000000Z", "app_time_zone" => "UTC", "session_time_zone" => nil,
  "schema" => "standard", "settings" => { "heartbeat_grace" => 300 }, "classes" => { "Report" => cls },
  "jobs" => [job.("a", "pending", 0, "2026-01-15T11:00:00.000000Z"),
             job.("b", "processing", 1, "2026-01-15T11:54:59.500000Z", "b/1"), # 300.5 s old: stale
             job.("c", "processing", 1, "2026-01-15T11:55:00.000000Z", "c/1"), # exactly 300 s: not stale (<)
             job.("d", "completed", 1, "2026-01-15T11:00:00.000000Z")],
  "leases" => [],
}
steps = [
  [{ "op" => "handshake", "protocol_versions" => [1], "reapcheck" => "smoke" }, ->(r) { r["protocol_version"] == 1 }],
  [setup, ->(r) { r == {} }],
  [{ "op" => "clock", "now" => "2026-01-15T12:00:00.000000Z" }, ->(r) { r["app"] == "2026-01-15T12:00:00.000000Z" }],
  [{ "op" => "claim", "job" => "a", "token" => "a/1" }, ->(r) { r["result"] == "claimed" }],
  [{ "op" => "claim", "job" => "b", "token" => "b/2" }, ->(r) { r["result"] == "claimed" }],
  [{ "op" => "claim", "job" => "c", "token" => "c/2" }, ->(r) { r["result"] == "not_claimable" }],
  [{ "op" => "claim", "job" => "d", "token" => "d/2" }, ->(r) { r["result"] == "not_claimable" }],
  [{ "op" => "reap", "timeout" => nil, "queues" => nil }, ->(r) { r == { "changed" => 0 } }],
  [{ "op" => "complete", "job" => "a", "token" => "a/1" }, ->(r) { r["result"] == "ok" }],
  [{ "op" => "fail", "job" => "b", "token" => "b/2" }, ->(r) { r["result"] == "ok" }],
  [{ "op" => "fail", "job" => "c", "token" => "c/1" }, ->(r) { r["result"] == "ok" }],
  [{ "op" => "clock", "now" => "2026-01-15T12:10:00.000000Z" }, ->(r) { r["app"] == "2026-01-15T12:10:00.000000Z" }],
  [{ "op" => "claim", "job" => "c", "token" => "c/2" }, ->(r) { r["result"] == "claimed" }],
  [{ "op" => "fail", "job" => "c", "token" => "c/2" }, ->(r) { r["result"] == "ok" }],
  [{ "op" => "heartbeat", "job" => "c", "token" => "c/2" }, ->(r) { r.nil? }], # unsupported
  [{ "op" => "read" }, lambda do |r|
    b = r["jobs"].find { |j| j["id"] == "b" }
    r["jobs"].map { |j| j["id"] } == ["b"] && # a completed, c failed for good: both deleted
      b == b.merge("status" => "pending", "attempts" => 1, "claim_token" => nil, "last_error" => "failed",
                   "run_at" => "2026-01-15T12:00:04.000000Z", "updated_at" => "2026-01-15T12:00:00.000000Z") &&
      r["hooks"] == [{ "job" => "b", "attempt" => 1, "final" => false, "error" => "failed" },
                     { "job" => "c", "attempt" => 1, "final" => false, "error" => "failed" },
                     { "job" => "c", "attempt" => 2, "final" => true, "error" => "failed" }]
  end],
  [{ "op" => "teardown" }, ->(r) { r == {} }],
]

failed = 0
Open3.popen3("ruby", File.join(__dir__, "adapter.rb")) do |stdin, stdout, stderr, _wait|
  Thread.new { stderr.each_line { |l| warn "  adapter: #{l}" } rescue IOError }
  steps.each_with_index do |(req, check), i|
    stdin.puts JSON.generate({ "seq" => i + 1 }.merge(req))
    line = stdout.gets or abort "adapter closed stdout at #{req['op']}"
    rep = JSON.parse(line)
    good = rep["seq"] == i + 1 && check.(rep["reply"] == "ok" ? rep["result"] : nil)
    failed += 1 unless good
    puts "#{good ? 'ok  ' : 'FAIL'} #{req['op']} #{req['job']} -> #{line}"
  end
  stdin.close
end
puts "#{steps.size - failed} passed, #{failed} failed"
exit(failed.zero? ? 0 : 1)
