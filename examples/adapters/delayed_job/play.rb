# Plays scenario files through adapter.rb without reapcheck (no model: it prints
# what delayed_job did). ruby play.rb sqlite|postgres URL|mariadb URL FILE...
require "json"; require "open3"; require "yaml"
target, url, *files = ARGV
db = target == "sqlite" ? nil : { "target" => target, "url" => url }
def dur(s)
  s = s.to_s.strip
  return nil if s.empty?
  sign = s.start_with?("-") ? -1 : 1
  us = 0
  s.sub(/\A[+-]/, "").scan(/([\d.]+)([dhms])/) { |n, u| us += (n.to_r * { "d" => 86400, "h" => 3600, "m" => 60, "s" => 1 }[u] * 1_000_000).to_i }
  sign * us
end
def at(base, v)
  return nil if v.nil?
  v = v.to_s
  if v =~ /\A\d{4}-/ then t = Time.iso8601(v.sub(/Z\z/, "+00:00")) rescue Time.parse(v); (t.to_r * 1_000_000).to_i
  else base + dur(v) end
end
def fmt(us) = Time.at(Rational(us, 1_000_000)).utc.strftime("%Y-%m-%dT%H:%M:%S.%6NZ")
def rel(s, now) ; return nil unless s; d = ((Time.iso8601(s).to_r * 1_000_000).to_i - now); d == 0 ? "0s" : format("%+.6fs", d / 1e6).sub(/\.?0+s\z/, "s"); end
require "time"
Open3.popen3("ruby", File.join(__dir__, "adapter.rb")) do |i, o, e, _|
  Thread.new { e.each_line { |l| warn l } rescue IOError }
  seq = 0
  rpc = ->(h) { seq += 1; i.puts JSON.generate({ "seq" => seq }.merge(h)); JSON.parse(o.gets) }
  rpc.({ "op" => "handshake", "protocol_versions" => [1], "reapcheck" => "play" })
  files.each do |f|
    sc = YAML.safe_load(File.read(f), permitted_classes: [Time, Date], aliases: true)
    now = at(0, (sc["now"] || "2026-01-15T12:00:00Z").is_a?(Time) ? sc["now"].utc.iso8601(6) : (sc["now"] || "2026-01-15T12:00:00Z"))
    classes = (sc["classes"] || {}).transform_values { |c| { "timeout" => 300, "idempotent" => true, "heartbeat_grace" => nil, "max_retries" => 3, "base_delay" => 2, "max_delay" => 3600, "exclusive" => false, "concurrency_key" => nil, "loadable" => true }.merge(c || {}) }
    jobs = []
    (sc["jobs"] || []).each do |j|
      ids = j["count"] ? (1..j["count"]).map { |k| "#{j['id']}#{k.to_s.rjust(j['count'].to_s.size, '0')}" } : [j["id"].to_s]
      ids.each do |id|
        c = classes[j["class"]]; st = j["status"] || "pending"
        jobs << { "id" => id, "class" => j["class"], "queue" => j["queue"] || "default", "status" => st, "attempts" => j["attempts"] || 0,
                  "max_retries" => j["max_retries"] || c["max_retries"], "claim_timeout" => j.key?("claim_timeout") ? j["claim_timeout"] : (st == "processing" ? c["timeout"] : nil),
                  "claim_token" => st == "processing" ? "#{id}/1" : nil, "concurrency_key" => j["concurrency_key"],
                  "heartbeat_at" => j["heartbeat"] ? fmt(at(now, j["heartbeat"])) : nil, "run_at" => fmt(at(now, j["run_at"] || "0s")), "updated_at" => fmt(at(now, j["claimed"] || "0s")) }
      end
    end
    claims = Hash.new(0); jobs.each { |j| claims[j["id"]] = 1 if j["status"] == "processing" }
    latest = {}; jobs.each { |j| latest[j["id"]] = j["claim_token"] }
    r = rpc.({ "op" => "setup", "scenario" => f, "namespace" => "rc_play_#{$$}", "database" => db, "now" => fmt(now), "app_time_zone" => "UTC",
               "session_time_zone" => sc["session_time_zone"], "schema" => sc["schema"] || "standard", "settings" => { "heartbeat_grace" => (sc["settings"] || {})["heartbeat_grace"] || 300 },
               "classes" => classes, "jobs" => jobs, "leases" => [] })
    if r["reply"] != "ok" then puts "#{f}: setup #{r['kind']}: #{r['message']}"; rpc.({ "op" => "teardown" }); next end
    rpc.({ "op" => "clock", "now" => fmt(now) })
    out = []
    (sc["steps"] || []).each do |s|
      op, arg = s.is_a?(String) ? [s, nil] : s.first
      case op
      when "advance" then now += dur(arg); rpc.({ "op" => "clock", "now" => fmt(now) }); out << nil; next
      when "set" then out << nil; next
      when "scan", "apply" then out << "SKIP(split)"; next
      when "reap" then r = rpc.({ "op" => "reap", "timeout" => arg.is_a?(Hash) ? arg["timeout"] : nil, "queues" => arg.is_a?(Hash) ? arg["queues"] : nil })
      when "claim"
        job = arg.is_a?(Hash) ? arg["job"] : arg; tok = arg.is_a?(Hash) && arg["as"] ? arg["as"] : "#{job}/#{claims[job] + 1}"
        r = rpc.({ "op" => "claim", "job" => job, "token" => tok })
        if r.dig("result", "result") == "claimed" then claims[job] += 1 unless arg.is_a?(Hash) && arg["as"]; latest[job] = tok end
      else
        job = arg.is_a?(Hash) ? arg["job"] : arg; tok = arg.is_a?(Hash) && arg["attempt"] ? arg["attempt"] : latest[job]
        r = tok ? rpc.({ "op" => op, "job" => job, "token" => tok }) : { "reply" => "ok", "result" => { "result" => "fenced(harness)" } }
      end
      out << { op => r["reply"] == "ok" ? (r["result"]["result"] || r["result"]["changed"]) : "#{r['kind']}: #{r['message']}"[0, 80] }
    end
    rd = rpc.({ "op" => "read" })
    state = rd.dig("result", "jobs")&.map { |j| "#{j['id']}:#{j['status']},att=#{j['attempts']},tok=#{j['claim_token']},run=#{rel(j['run_at'], now)},upd=#{rel(j['updated_at'], now)},err=#{j['last_error']}" }
    puts "#{f}\n  steps: #{out.to_json}\n  jobs: #{(state || [rd]).first(6).join(' | ')}#{state && state.size > 6 ? " ... (#{state.size})" : ''}\n  hooks: #{rd.dig('result', 'hooks').to_json}"
    rpc.({ "op" => "teardown" })
  end
end
