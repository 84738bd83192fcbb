//! `reapcheck adapter check`: validates an adapter (in progress).
