#![no_std]
#![no_main]
unimem_user::entry!(main);
fn main() -> Result<u64, unimem_user::Error> { Ok(0) }
