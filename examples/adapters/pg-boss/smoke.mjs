// Smoke test by hand: node smoke.mjs (needs PostgreSQL at REAPCHECK_POSTGRES_URL).
// Plays one job through claim, expiry by maintain(), a second claim and
// complete, printing every exchange; exits 1 on any error reply.
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

const url = process.env.REAPCHECK_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const ns = `rc_smoke_${process.pid}`
const child = spawn('node', [new URL('./adapter.mjs', import.meta.url).pathname], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, TZ: 'UTC' } })
const lines = createInterface({ input: child.stdout })
const waiting = []
lines.on('line', l => waiting.shift()(JSON.parse(l)))
let seq = 0
let failed = false
async function send (op, fields = {}) {
  const req = { seq: ++seq, op, ...fields }
  const reply = await new Promise(resolve => { waiting.push(resolve); child.stdin.write(JSON.stringify(req) + '\n') })
  console.log('>', JSON.stringify(req).slice(0, 200))
  console.log('<', JSON.stringify(reply).slice(0, 600))
  if (reply.reply !== 'ok') failed = true
  return reply
}
const cls = { timeout: 300, idempotent: true, heartbeat_grace: null, max_retries: 3, base_delay: 2, max_delay: 3600, exclusive: false, concurrency_key: null, loadable: true }
await send('handshake', { protocol_versions: [1], reapcheck: 'smoke' })
await send('setup', {
  scenario: 'smoke', namespace: ns, database: { target: 'postgres', url }, now: '2026-01-15T12:00:00.000000Z',
  app_time_zone: 'UTC', session_time_zone: null, schema: 'standard', settings: { heartbeat_grace: 300 },
  classes: { Report: cls },
  jobs: [
    { id: 'a', class: 'Report', queue: 'default', status: 'processing', attempts: 1, max_retries: 3, claim_timeout: 300, claim_token: 'a/1', concurrency_key: null, heartbeat_at: null, run_at: '2026-01-15T11:50:00.000000Z', updated_at: '2026-01-15T11:50:00.000000Z' },
    { id: 'b', class: 'Report', queue: 'default', status: 'pending', attempts: 0, max_retries: 3, claim_timeout: null, claim_token: null, concurrency_key: null, heartbeat_at: null, run_at: '2026-01-15T11:59:59.999999Z', updated_at: '2026-01-15T11:59:00.000000Z' }
  ],
  leases: []
})
await send('clock', { now: '2026-01-15T12:00:00.000000Z' })
await send('claim', { job: 'b', token: 'b/1' })
await send('claim', { job: 'b', token: 'b/2' })
await send('reap', { timeout: null, queues: null })
await send('clock', { now: '2026-01-15T12:00:00.500001Z' })
await send('claim', { job: 'a', token: 'a/2' })
await send('complete', { job: 'a', token: 'a/1' })
await send('fail', { job: 'b', token: 'b/1' })
await send('read')
await send('teardown')
child.stdin.end()
child.on('exit', code => { console.log('adapter exit', code); process.exit(failed ? 1 : 0) })
