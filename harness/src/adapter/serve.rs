//! `reapcheck adapter serve`: the reference adapter (in progress).
