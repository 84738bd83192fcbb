//! Adapter mode: reapcheck drives a queue's own code through a small
//! program in the queue's language, the adapter, speaking the JSON-lines
//! protocol of docs/adapter-protocol.md.
//!
//! - [`protocol`]: the messages of version 1, their strict serde types and
//!   the conversion of a `read` into an outcome.
//! - [`serve`]: the reference adapter, reapcheck's own driver and dialect
//!   SQL behind the protocol (`reapcheck adapter serve`).
//! - [`check`]: `reapcheck adapter check -- CMD`, a fixed script that
//!   validates an adapter's every reply.
//! - [`spin`]: a pipe read that polls for a moment before it sleeps.
//! - [`process`], [`client`], `play`, [`target`]: running an adapter as a
//!   target of `reapcheck run` (the child process, the request/reply
//!   client, one scenario's requests and replies, and the target that
//!   plays scenarios through it and judges them).

pub mod check;
pub mod client;
mod play;
pub mod process;
pub mod protocol;
pub mod serve;
pub mod spin;
pub mod target;
