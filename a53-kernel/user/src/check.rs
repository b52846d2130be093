//! The service's static checks (`proto::gsas::static_check`), as the library runs them before it
//! sends: against the reference service's allocation limit.

use proto::gsas::{ErrorCode, MAX_ALLOC_PAGES, RawRequest};

/// `Err(code)` if the service on node `target` must answer `raw` with `code` whatever its state.
pub fn static_check(raw: &RawRequest, target: u16) -> Result<(), ErrorCode> {
    proto::gsas::static_check(raw, target, MAX_ALLOC_PAGES).map(drop)
}
