# frozen_string_literal: true

# reapcheck adapter for delayed_job with its ActiveRecord backend (protocol
# version 1, docs/adapter-protocol.md). One program for PostgreSQL, MariaDB
# and SQLite: setup's `database` names the server, `null` means SQLite.
#
# Requests come as JSON lines on stdin, replies go to stdout; everything else
# (logs, migrations' chatter, tracebacks) goes to stderr. The queue's own code
# does every write: the migration is delayed_job_active_record's generator
# template, a claim is Delayed::Job.reserve, complete and fail are
# Delayed::Worker#run. README.md beside this file says what maps to what.

require "json"
require "erb"
require "logger"
PROTOCOL = $stdout.dup
PROTOCOL.sync = true
$stdout = $stderr # nothing but replies may reach the real stdout
require "delayed_job_active_record"

ActiveRecord::Base.default_timezone = :utc # Rails' default; db_time_now is then Time.now.utc
ActiveRecord::Base.logger = nil
ActiveRecord::Migration.verbose = false
Delayed::Worker.logger = Logger.new($stderr, level: Logger::WARN)
Delayed::Worker.destroy_failed_jobs = true # the default: a failed job's row is deleted

# The app clock: Time.now, which Delayed::Job.db_time_now and ActiveRecord's
# timestamps read, reads the instant of the last `clock` request.
module FrozenClock
  class << self
    attr_accessor :instant # a UTC Time, or nil for the real clock
  end

  def now(**kw)
    t = FrozenClock.instant
    return super unless t

    kw[:in] ? t.getlocal(kw[:in]) : t.getlocal # a fresh object: Time#utc mutates
  end
end
Time.singleton_class.prepend(FrozenClock)

# The migration the generator writes (`rails g delayed_job:active_record`),
# rendered from the installed gem's own template: no column is invented here.
MIGRATION_TEMPLATE = File.join(Gem::Specification.find_by_name("delayed_job_active_record").gem_dir,
                               "lib/generators/delayed_job/templates/migration.rb")
migration_version = "[#{ActiveRecord::VERSION::MAJOR}.#{ActiveRecord::VERSION::MINOR}]"
eval(ERB.new(File.read(MIGRATION_TEMPLATE)).result(binding), TOPLEVEL_BINDING, MIGRATION_TEMPLATE) # rubocop:disable Security/Eval

# Raised by a job's perform when the step is `fail`.
class ScenarioFailure < StandardError; end

# The job object (delayed_job's "payload"), one per row, serialized into
# `handler`. It carries the scenario class's settings as delayed_job's own
# per-job hooks: max_attempts, max_run_time, reschedule_at, error, failure.
class ScenarioJob
  attr_accessor :job_id, :class_name, :max_attempts, :max_run_time, :base_delay, :max_delay

  def initialize(**attrs)
    attrs.each { |k, v| public_send("#{k}=", v) }
  end

  def perform
    raise ScenarioFailure, "the scenario's fail step" if Adapter.failing
  end

  # min(base * 2^attempts, max) seconds after now; attempts are the failures
  # so far, this one included (Worker#reschedule adds 1 before it asks).
  def reschedule_at(now, attempts)
    now + [base_delay * 2**attempts, max_delay].min
  end

  def error(job, _exception)
    Adapter.hooks << { "job" => job_id, "attempt" => job.attempts + 1, "final" => false, "error" => "failed" }
  end

  def failure(_job)
    Adapter.hooks.last["final"] = true if Adapter.hooks.last&.fetch("job") == job_id
  end
end

# The protocol's operations over delayed_job.
module Adapter
  class Refused < StandardError; end
  class Unsupported < StandardError; end

  class << self
    attr_accessor :failing, :hooks
  end
  self.hooks = []

  module_function

  def instant(text)
    m = /\A(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?Z\z/.match(text) or raise ArgumentError, "bad instant #{text}"
    Time.utc(*m[1..6].map(&:to_i), (m[7] || "0").ljust(6, "0").to_i)
  end

  def text(time)
    time&.utc&.strftime("%Y-%m-%dT%H:%M:%S.%6NZ")
  end

  def handshake(_req)
    versions = %w[delayed_job delayed_job_active_record activerecord].map { |g| "#{g} #{Gem.loaded_specs[g].version}" }
    {
      "protocol_version" => 1,
      "adapter" => { "name" => "delayed_job-adapter", "version" => "1.0.0", "language" => "ruby #{RUBY_VERSION}" },
      "queue" => { "name" => "delayed_job", "version" => Gem.loaded_specs["delayed_job"].version.to_s },
      "capabilities" => { "features" => %w[legacy worker_fail hooks], "split_reap" => false, "clocks" => ["app"] },
      "policy" => POLICY,
      "state" => STATE,
    }.tap { warn "delayed_job adapter: #{versions.join(', ')}, #{ActiveRecord::Base.default_timezone} timestamps" }
  end

  def knob(value, reason) = { "value" => value, "reason" => reason }

  POLICY = {
    "recovery" => knob("next_claim", "delayed_job has no reaper: Job.reserve takes a job whose locked_at is older " \
                                     "than Worker.max_run_time (ready_to_run), so the next claim recovers it"),
    "claim_window" => knob("timeout", "the stale-lock test is locked_at < now - Worker.max_run_time, with no margin; " \
                                      "the adapter sets max_run_time to the scenario's largest class timeout"),
    "retry_count" => knob("max_attempts", "Worker#reschedule retries while attempts + 1 < max_attempts: it counts runs " \
                                          "in all; the job's max_retries is mapped to max_attempts as it is"),
    "non_idempotent" => knob("retry", "delayed_job has no notion of idempotency: a stale lock is re-taken whatever the class"),
    "give_up" => knob("never", "a re-taken stale lock adds nothing to attempts and checks no max_attempts: a job " \
                               "whose worker died is taken again however often it died"),
  }.freeze
  # No `fence` knob: Worker#run's job.destroy and Worker#reschedule's job.save!
  # write by id alone, so a late attempt deletes or unlocks the job another
  # attempt holds. That is judged (and fails), not declared: README.md.

  STATE = {
    "finished_rows" => knob("deleted", "Worker#run destroys a finished job, and Worker#failed destroys a failed one " \
                                       "(destroy_failed_jobs, true by default)"),
  }.freeze

  # --- setup and teardown -------------------------------------------------

  def setup(req)
    teardown(nil) if @db || @file
    beaten = req["jobs"].find { |j| j["heartbeat_at"] } # before anything is made, on every database alike
    raise Unsupported, "delayed_job keeps no heartbeat: job #{beaten['id']} cannot have beaten" if beaten

    @db = req["database"]
    @ns = req["namespace"]
    FrozenClock.instant = instant(req["now"])
    connect(req["session_time_zone"])
    CreateDelayedJobs.migrate(:up)
    timeouts = req["jobs"].map { |j| req["classes"].fetch(j["class"])["timeout"] }
    Delayed::Worker.max_run_time = timeouts.max || Delayed::Worker::DEFAULT_MAX_RUN_TIME
    @ids = {}      # delayed_jobs.id -> the scenario's job id
    @priority = {} # the scenario's job id -> its own priority, which a claim selects
    @attempts = {} # [job id, attempt label] -> the job object that attempt's worker holds (labels repeat across jobs)
    @finished = {} # [job id, attempt label] -> true once that attempt's run has ended
    self.hooks = []
    rows = req["jobs"].each_with_index.filter_map { |job, i| row(job, req["classes"].fetch(job["class"]), i + 1) }
    Delayed::Job.insert_all!(rows) unless rows.empty? # one statement: create! took 7 ms a row
    Delayed::Job.pluck(:id, :priority).each { |id, priority| @ids[id] = req["jobs"][priority - 1]["id"] }
    # The worker of each processing row holds the job object it reserved.
    Delayed::Job.where.not(locked_by: nil).each { |r| @attempts[[@ids.fetch(r.id), r.locked_by]] = r }
    {}
  end

  def connect(session_zone)
    case @db && @db["target"]
    when nil
      @file = "#{@ns}.db"
      ActiveRecord::Base.establish_connection(adapter: "sqlite3", database: @file)
    when "postgres"
      ActiveRecord::Base.establish_connection(@db["url"])
      ActiveRecord::Base.connection.execute("CREATE SCHEMA #{quoted_ns}")
      vars = session_zone ? { timezone: session_zone } : {}
      ActiveRecord::Base.establish_connection(url_config.merge(schema_search_path: @ns, variables: vars))
    when "mariadb", "mysql"
      base = url_config.merge(adapter: "mysql2")
      ActiveRecord::Base.establish_connection(base)
      ActiveRecord::Base.connection.execute("CREATE DATABASE #{quoted_ns}")
      vars = session_zone ? { time_zone: session_zone } : {}
      ActiveRecord::Base.establish_connection(base.merge(database: @ns, variables: vars))
      begin
        ActiveRecord::Base.connection.verify!
      rescue ActiveRecord::StatementInvalid => e
        raise unless e.message.include?("Unknown or incorrect time zone")

        raise "the server has no time zone tables, so it knows no zone #{session_zone}: load them with " \
              "`sh ci/mysql-timezones.sh` (offsets such as +05:30 always work)"
      end
    else raise Unsupported, "database target #{@db['target']}: this adapter runs on postgres, mariadb and sqlite"
    end
  end

  def url_config
    ActiveRecord::DatabaseConfigurations::ConnectionUrlResolver.new(@db["url"]).to_hash
  end

  def quoted_ns = ActiveRecord::Base.connection.quote_table_name(@ns)

  # The row delayed_job would hold for `job`, or nil for a finished one
  # (delayed_job deleted it). Every column is the migration's own.
  def row(job, klass, priority)
    @priority[job["id"]] = priority
    processing = job["status"] == "processing"
    return unless processing || job["status"] == "pending"

    payload = ScenarioJob.new(job_id: job["id"], class_name: job["class"], max_attempts: job["max_retries"],
                              max_run_time: klass["timeout"], base_delay: klass["base_delay"], max_delay: klass["max_delay"])
    handler = payload.to_yaml
    handler = handler.sub("!ruby/object:ScenarioJob", "!ruby/object:NotLoadable") unless klass["loadable"]
    updated = instant(job["updated_at"])
    {
      priority: priority, queue: job["queue"], handler: handler, run_at: instant(job["run_at"]),
      attempts: [job["attempts"] - (processing ? 1 : 0), 0].max, # delayed_job counts failed runs only
      locked_at: processing ? updated : nil, locked_by: processing ? job["claim_token"] : nil,
      last_error: nil, failed_at: nil, created_at: updated, updated_at: updated,
    }
  end

  def teardown(_req)
    return {} unless @db || @file

    if @db # drop from a fresh connection to the server: the scenario's may be the one that failed
      ActiveRecord::Base.remove_connection
      ActiveRecord::Base.establish_connection(@db["target"] == "postgres" ? @db["url"] : url_config.merge(adapter: "mysql2"))
      drop = @db["target"] == "postgres" ? "DROP SCHEMA IF EXISTS #{quoted_ns} CASCADE" : "DROP DATABASE IF EXISTS #{quoted_ns}"
      ActiveRecord::Base.connection.execute(drop)
    end
    ActiveRecord::Base.remove_connection
    File.delete(@file) if @file && File.exist?(@file)
    {}
  ensure
    @db = @file = nil # never tried twice: reapcheck drops the namespace after a failure too
  end

  # --- clock and worker steps --------------------------------------------

  def clock(req)
    FrozenClock.instant = instant(req["now"])
    { "app" => text(Delayed::Job.db_time_now), "database" => nil }
  end

  # Delayed::Job.reserve (what Worker#reserve_job calls, without its rescue
  # that would turn an error into "no job") with the job's own priority as
  # min_priority and max_priority, so the ready scope holds this job alone.
  def claim(req)
    worker = Delayed::Worker.new(quiet: true)
    worker.name = req["token"] # locked_by is the attempt's label
    # A job the setup did not write (a finished row: delayed_job deletes
    # those) is not in the table, so nothing can claim it.
    priority = @priority[req["job"]]
    return { "result" => "not_claimable" } unless priority

    Delayed::Worker.min_priority = Delayed::Worker.max_priority = priority
    job = Delayed::Job.reserve(worker)
    return { "result" => "not_claimable" } unless job
    unless @ids[job.id] == req["job"]
      raise "reserve locked job #{req['job']} but returned job #{@ids[job.id]}: on MySQL it finds the job it locked " \
            "by locked_at (whole seconds) and locked_by, and worker #{req['token']} holds another lock from that second"
    end

    @attempts[[req["job"], req["token"]]] = job
    { "result" => "claimed" }
  ensure
    Delayed::Worker.min_priority = Delayed::Worker.max_priority = nil
  end

  def heartbeat(_req)
    raise Unsupported, "delayed_job has no heartbeat: a running job writes nothing until it ends"
  end

  # Worker#run on the object the attempt's worker holds: perform, then
  # destroy (complete), or the failure path through reschedule (fail).
  def finish(req, failing)
    job = @attempts.fetch([req["job"], req["token"]]) { raise Refused, "attempt #{req['token']} holds no job object" }
    # A worker runs the job it reserved once: after its complete or fail the
    # attempt is over, and delayed_job has nothing left to write for it.
    raise Refused, "attempt #{req['token']} already ran job #{req['job']} to its end" if @finished[[req["job"], req["token"]]]

    @finished[[req["job"], req["token"]]] = true
    worker = Delayed::Worker.new(quiet: true)
    worker.name = req["token"]
    self.failing = failing
    Delayed::Worker.lifecycle.run_callbacks(:perform, worker, job) { worker.run(job) }
    { "result" => "ok", "lease_lost" => false }
  ensure
    self.failing = false
  end

  def complete(req) = finish(req, false)
  def fail(req) = finish(req, true)
  def reap(_req) = { "changed" => 0 } # no reaper: recovery = next_claim
  def set(_req) = {} # no heartbeat grace to set

  def read(_req)
    jobs = Delayed::Job.order(:priority).map do |r|
      locked = !r.locked_by.nil?
      {
        "id" => @ids.fetch(r.id), "status" => locked ? "processing" : "pending",
        "attempts" => r.attempts + (locked ? 1 : 0), "claim_token" => r.locked_by, "heartbeat_at" => nil,
        "run_at" => text(r.run_at), "updated_at" => text(locked ? r.locked_at : r.updated_at),
        "failed_at" => text(r.failed_at), "completed_at" => nil, "last_error" => r.last_error ? "failed" : nil,
        "raw" => r.attributes.except("handler", "last_error").transform_values { |v| v.is_a?(Time) ? text(v) : v }
                  .merge("last_error" => r.last_error&.lines&.first&.chomp),
      }
    end
    { "jobs" => jobs, "leases" => [], "hooks" => hooks }
  end
end

OPS = %w[handshake setup clock claim heartbeat complete fail reap set read teardown].freeze

def reply(seq, body) = PROTOCOL.write(JSON.generate({ "seq" => seq }.merge(body)) + "\n")

$stdin.each_line do |line|
  req = JSON.parse(line)
  seq = req["seq"]
  begin
    raise Adapter::Unsupported, "operation #{req['op']}" unless OPS.include?(req["op"])

    reply(seq, "reply" => "ok", "result" => Adapter.public_send(req["op"], req))
  rescue Adapter::Unsupported => e
    reply(seq, "reply" => "error", "kind" => "unsupported", "message" => e.message)
  rescue Adapter::Refused => e
    reply(seq, "reply" => "error", "kind" => "refused", "message" => e.message)
  rescue StandardError, ScriptError => e
    warn "#{e.class}: #{e.message}\n#{e.backtrace.join("\n")}"
    reply(seq, "reply" => "error", "kind" => "exception", "message" => "#{e.class}: #{e.message}",
               "traceback" => e.backtrace.first(20).join("\n"))
  end
end
