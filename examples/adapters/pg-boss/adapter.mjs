// reapcheck adapter (protocol 1) for pg-boss 10 on PostgreSQL.
//
// reapcheck sends one JSON request a line on stdin; this program answers one
// JSON reply a line on stdout, and logs only to stderr. Every step goes
// through pg-boss's own API: insert() and createQueue() to write the
// scenario's jobs, fetch() to claim, complete() and fail() as the worker,
// maintain() (what supervise runs: expire, archive, drop) as the reaper.
// See README.md beside this file for the mapping and the declared policy.

import { createRequire } from 'node:module'
import { createHash } from 'node:crypto'
import { createInterface } from 'node:readline'
import { clock, installAppClock } from './clock.mjs'

const require = createRequire(import.meta.url)
const PgBoss = require('pg-boss')
const pg = require('pg')
const QUEUE_VERSION = require('pg-boss/package.json').version
const ADAPTER_VERSION = require('./package.json').version

installAppClock()

/** What pg-boss writes into `output` when its maintenance expires a job. */
const TIMEOUT_MESSAGE = 'job failed by timeout in active state'
/** What this adapter's worker passes to fail(). */
const WORKER_ERROR = { message: 'reapcheck worker raised' }

const HANDSHAKE = {
  protocol_version: 1,
  adapter: { name: 'pg-boss-adapter', version: ADAPTER_VERSION, language: `node ${process.versions.node}` },
  queue: { name: 'pg-boss', version: QUEUE_VERSION },
  capabilities: { features: ['worker_fail'], split_reap: false, clocks: ['app', 'database'] },
  policy: {
    scan_floor: { value: 'none', reason: 'expire() takes every active job past started_on + expire_in; there is no 30 s floor' },
    claim_window: { value: 'timeout', reason: 'a job expires expire_in (the class timeout) after started_on, its fetch time' },
    retry: { value: 'immediate', reason: "the adapter keeps pg-boss's default retryDelay 0 without retryBackoff: a retry is due at once (its backoff is jittered by random() and has no max delay)" },
    non_idempotent: { value: 'retry', reason: 'pg-boss has no notion of idempotency: an expired job is retried like any other' },
    queues: { value: 'none', reason: 'maintenance expires jobs of every queue at once; the adapter gives each job its own pg-boss queue so fetch() can take that job' },
    fence: { value: 'none', reason: 'complete() and fail() take a job id and check only its state, not which fetch it was' }
  },
  state: {
    absent: { value: ['heartbeat_at', 'updated_at'], reason: 'pg-boss 10 has no heartbeat and no updated column; started_on is the claim time' }
  }
}

/** One scenario's connection, boss and attempt labels; null between scenarios. */
let scenario = null

class Unsupported extends Error {}

/**
 * Scenarios with at most this many jobs give each job its own pg-boss queue,
 * so fetch() takes exactly the job a claim names. Each queue is a partition
 * table, so larger scenarios share one pg-boss queue per scenario queue.
 */
const QUEUE_PER_JOB_UP_TO = 64

/** The pg-boss queue of a scenario job. */
function queueName (job) {
  const name = scenario.queuePerJob ? `${job.queue}.${job.id}` : job.queue
  return name.replace(/[^\w.-]/g, '_')
}

/** A stable uuid for a scenario job id (pg-boss's ids are uuids). */
function jobUuid (id) {
  const h = createHash('sha1').update(`reapcheck:${id}`).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`
}

/** Runs SQL on the scenario's one connection, the one pg-boss uses too. */
function sql (text, values) {
  return scenario.client.query(text, values)
}

/** Sets the session clock read by the namespace's now(). */
async function setDatabaseClock (now) {
  await sql("SELECT pg_catalog.set_config('reapcheck.now', $1, false)", [now])
}

const ISO = (col) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

async function setup (req) {
  if (!req.database || req.database.target !== 'postgres') throw new Unsupported('pg-boss runs on PostgreSQL only')
  if (req.schema === 'legacy') throw new Unsupported('pg-boss has no legacy table')
  if (req.leases.length) throw new Unsupported('pg-boss has no leases')
  const beat = req.jobs.find(j => j.heartbeat_at !== null)
  if (beat) throw new Unsupported(`pg-boss 10 has no heartbeat: job ${beat.id} cannot hold one`)
  for (const j of req.jobs) {
    if (j.status === 'interrupted') throw new Unsupported(`pg-boss has no interrupted state (job ${j.id})`)
    if (j.status === 'processing' && j.claim_timeout === null) {
      throw new Unsupported(`pg-boss's expire_in is NOT NULL: active job ${j.id} cannot be without a timeout`)
    }
    const timeout = j.status === 'processing' ? j.claim_timeout : req.classes[j.class].timeout
    if (timeout <= 0) throw new Unsupported(`pg-boss's expireInSeconds is at least 1 (job ${j.id} has ${timeout})`)
  }
  // The namespace is written into SQL as it is (pg-boss does the same with its
  // schema), so it must be a plain lowercase name, as reapcheck's are.
  if (!/^[a-z_][a-z0-9_]{0,49}$/.test(req.namespace)) {
    throw new Error(`namespace ${JSON.stringify(req.namespace)} is not a plain schema name of at most 50 characters`)
  }
  const client = new pg.Client({ connectionString: req.database.url })
  await client.connect()
  const ns = req.namespace
  const queuePerJob = req.jobs.length <= QUEUE_PER_JOB_UP_TO
  scenario = { client, ns, queuePerJob, boss: null, tokens: new Map(), ids: new Map() }
  clock.set(req.now)
  // The clock route of the protocol: now() in the namespace, searched before
  // pg_catalog, created before pg-boss's migrations so its defaults use it.
  await sql(`CREATE SCHEMA ${ns}`)
  await sql(`SET search_path = ${ns}, pg_catalog`)
  if (req.session_time_zone) await sql(`SET TIME ZONE '${req.session_time_zone.replace(/'/g, "''")}'`)
  await setDatabaseClock(req.now)
  for (const fn of ['now', 'clock_timestamp', 'statement_timestamp', 'transaction_timestamp']) {
    await sql(`CREATE FUNCTION ${ns}.${fn}() RETURNS timestamptz LANGUAGE sql STABLE AS
      $$ SELECT pg_catalog.current_setting('reapcheck.now')::pg_catalog.timestamptz $$`)
  }
  const boss = new PgBoss({
    db: { executeSql: (text, values) => client.query(text, values) },
    schema: ns,
    supervise: false, // reapcheck runs maintain() itself, as the reap step
    schedule: false
  })
  boss.on('error', err => console.error('pg-boss error:', err))
  await boss.start()
  scenario.boss = boss
  for (const job of req.jobs) scenario.ids.set(job.id, job)
  for (const name of new Set(req.jobs.map(queueName))) await boss.createQueue(name)
  await boss.insert(req.jobs.map(job => {
    const cls = req.classes[job.class]
    return {
      id: jobUuid(job.id),
      name: queueName(job),
      data: { reapcheck_id: job.id, class: job.class },
      startAfter: job.run_at,
      retryLimit: job.max_retries,
      retryDelay: 0,
      retryBackoff: false,
      expireInSeconds: job.status === 'processing' ? job.claim_timeout : cls.timeout
    }
  }))
  // A row that was fetched before the scenario starts: pg-boss's own columns
  // for its past, written directly (fetch() can only claim at the clock).
  // (completed_on stays NULL: the contract's rows carry no finish time at setup.)
  const STATE = { pending: 'retry', processing: 'active', completed: 'completed', failed: 'failed' }
  const past = req.jobs.filter(job => job.attempts > 0 || job.status !== 'pending').map(job => ({
    id: jobUuid(job.id),
    state: STATE[job.status],
    retry_count: Math.max(job.attempts - 1, 0),
    // attempts = retry_count, plus 1 once started_on is set (the first fetch)
    started_on: job.attempts === 0 && job.status !== 'processing' ? null : job.updated_at
  }))
  await sql(`UPDATE ${ns}.job j SET state = p.state::${ns}.job_state, retry_count = p.retry_count, started_on = p.started_on
    FROM jsonb_to_recordset($1::jsonb) AS p(id uuid, state text, retry_count int, started_on timestamptz)
    WHERE j.id = p.id`, [JSON.stringify(past)])
  for (const job of req.jobs) {
    if (job.status === 'processing' && job.claim_token) {
      scenario.tokens.set(job.id, { token: job.claim_token, retryCount: Math.max(job.attempts - 1, 0), startedOn: job.updated_at })
    }
  }
  return {}
}

async function setClock (req) {
  clock.set(req.now)
  await setDatabaseClock(req.now)
  const { rows } = await sql(`SELECT ${ISO('now()')} AS db`)
  return { app: clock.iso(), database: rows[0].db }
}

/** The job's pg-boss row (job table, then archive), or null. */
async function row (id) {
  const ns = scenario.ns
  const { rows } = await sql(`SELECT state::text, retry_count, ${ISO('started_on')} AS started_on FROM ${ns}.job WHERE id = $1`, [jobUuid(id)])
  return rows[0] ?? null
}

/** Whether `token` is the live attempt of job `id`. */
async function holds (id, token) {
  const t = scenario.tokens.get(id)
  if (!t || t.token !== token) return false
  const r = await row(id)
  return r !== null && r.state === 'active' && r.retry_count === t.retryCount && r.started_on === t.startedOn
}

async function claim (req) {
  const job = scenario.ids.get(req.job)
  if (!scenario.queuePerJob) {
    // fetch() takes its queue's first due job (priority, created_on, id):
    // the same order, to know whether that is the job the claim names.
    const { rows } = await sql(`SELECT data->>'reapcheck_id' AS id FROM ${scenario.ns}.job WHERE name = $1
      AND state < 'active' AND start_after < now() ORDER BY priority DESC, created_on, id`, [queueName(job)])
    if (!rows.some(r => r.id === req.job)) return { result: 'not_claimable' }
    if (rows[0].id !== req.job) throw new Unsupported(`fetch() would take job ${rows[0].id} before ${req.job}`)
  }
  const [fetched] = await scenario.boss.fetch(queueName(job))
  if (!fetched) return { result: 'not_claimable' }
  const r = await row(req.job)
  scenario.tokens.set(req.job, { token: req.token, retryCount: r.retry_count, startedOn: r.started_on })
  return { result: 'claimed' }
}

async function finish (req, how) {
  const job = scenario.ids.get(req.job)
  const held = await holds(req.job, req.token)
  const res = how === 'complete'
    ? await scenario.boss.complete(queueName(job), jobUuid(req.job))
    : await scenario.boss.fail(queueName(job), jobUuid(req.job), WORKER_ERROR)
  if (res.affected === 0) return { result: 'fenced', lease_lost: false }
  if (!held) console.error(`${how} of ${req.token} landed on job ${req.job} it did not hold (pg-boss checks no attempt)`)
  return { result: 'ok', lease_lost: false }
}

async function reap () {
  const ns = scenario.ns
  const active = async () => (await sql(`SELECT id, retry_count, ${ISO('started_on')} AS s FROM ${ns}.job WHERE state = 'active'`)).rows
  const before = await active()
  await scenario.boss.maintain()
  const after = new Set((await active()).map(r => `${r.id}|${r.retry_count}|${r.s}`))
  return { changed: before.filter(r => !after.has(`${r.id}|${r.retry_count}|${r.s}`)).length }
}

const STATUS = { created: 'pending', retry: 'pending', active: 'processing', completed: 'completed', failed: 'failed', cancelled: 'failed' }

async function read () {
  const ns = scenario.ns
  const cols = `id, name, data, state::text AS state, retry_count, retry_limit, output, ${ISO('start_after')} AS start_after,
    ${ISO('started_on')} AS started_on, ${ISO('completed_on')} AS completed_on, ${ISO('created_on')} AS created_on, expire_in::text AS expire_in`
  const { rows } = await sql(`SELECT ${cols}, 'job' AS "table" FROM ${ns}.job
    UNION ALL SELECT ${cols}, 'archive' FROM ${ns}.archive ORDER BY id`)
  const jobs = []
  for (const r of rows) {
    const id = r.data?.reapcheck_id
    if (id === undefined) continue // not a scenario job (a dead letter would be one)
    const t = scenario.tokens.get(id)
    const live = r.state === 'active' && t && t.retryCount === r.retry_count && t.startedOn === r.started_on
    const message = r.output?.value?.message ?? r.output?.message ?? null
    jobs.push({
      id,
      status: STATUS[r.state],
      attempts: r.retry_count + (r.started_on === null ? 0 : 1),
      claim_token: live ? t.token : null,
      heartbeat_at: null,
      run_at: r.start_after,
      updated_at: r.state === 'active' ? r.started_on : null,
      failed_at: r.state === 'failed' ? r.completed_on : null,
      completed_at: r.state === 'completed' ? r.completed_on : null,
      last_error: message === null ? null : message === TIMEOUT_MESSAGE ? 'timeout' : 'failed',
      raw: { ...r, data: undefined }
    })
  }
  jobs.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  return { jobs, leases: [], hooks: [] }
}

async function teardown () {
  if (scenario) {
    const { boss, client, ns: scenario_ns } = scenario
    scenario = null
    if (boss) await boss.stop({ graceful: false, close: false, wait: true }).catch(e => console.error(e))
    await client.query(`DROP SCHEMA IF EXISTS ${scenario_ns} CASCADE`).catch(e => console.error(e))
    await client.end().catch(e => console.error(e))
  }
  return {}
}

const OPS = {
  handshake: async (req) => {
    if (!req.protocol_versions.includes(1)) throw new Unsupported('this adapter speaks protocol version 1 only')
    return HANDSHAKE
  },
  setup: async (req) => { await teardown(); return setup(req) },
  clock: setClock,
  claim,
  heartbeat: async () => { throw new Unsupported('pg-boss 10 has no heartbeat') },
  complete: (req) => finish(req, 'complete'),
  fail: (req) => finish(req, 'fail'),
  reap,
  scan: async () => { throw new Unsupported('maintain() has no place to stop between its read and its write') },
  apply: async () => { throw new Unsupported('maintain() has no place to stop between its read and its write') },
  set: async () => ({}), // the grace only concerns heartbeats, which pg-boss 10 does not have
  read,
  teardown
}

function reply (obj) {
  process.stdout.write(JSON.stringify(obj) + '\n')
}

async function handle (line) {
  let req
  try {
    req = JSON.parse(line)
  } catch (e) {
    console.error(`not JSON: ${line}`)
    return
  }
  const { seq, op } = req
  try {
    const op_ = OPS[op]
    if (!op_) throw new Unsupported(`unknown op ${op}`)
    if (!scenario && !['handshake', 'setup', 'teardown', 'heartbeat', 'scan', 'apply'].includes(op)) {
      throw new Error(`no scenario is set up: send a setup that succeeds before ${op}`)
    }
    reply({ seq, reply: 'ok', result: await op_(req) })
  } catch (e) {
    const kind = e instanceof Unsupported ? 'unsupported' : 'exception'
    if (kind === 'exception') console.error(e)
    reply(kind === 'exception'
      ? { seq, reply: 'error', kind, message: String(e.message || e), traceback: String(e.stack || '') }
      : { seq, reply: 'error', kind, message: e.message })
  }
}

const input = createInterface({ input: process.stdin, crlfDelay: Infinity })
let chain = Promise.resolve()
input.on('line', line => { chain = chain.then(() => handle(line)) })
input.on('close', () => { chain.then(teardown).finally(() => process.exit(0)) })
