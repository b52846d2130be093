//! ZynqMP platform-management calls to the PMU firmware, through ATF's SiP service
//! (`plat/xilinx/zynqmp/pm_service` in ATF; UG1200 "PM API").

use smccc::{Call, Smc};

/// SiP service, SMC64 fast call, ATF's `PM_SIP_SVC`.
const PM_SIP_SVC: u32 = 0xc200_0000;
const PM_REQUEST_WAKEUP: u32 = 10;
/// `REQUEST_ACK_BLOCKING`: the call returns the PMU firmware's status.
const REQUEST_ACK_BLOCKING: u64 = 2;

/// Asks the PMU firmware to power up and start `node` at `address`.
///
/// Argument packing per ATF's `pm_smc_handler`: x1 = node | (address_low | set_address) << 32,
/// x2 = address_high | ack << 32; x0 returns the status (0 = success).
pub fn request_wakeup(node: u32, address: u64) -> Result<(), i32> {
    let mut args = [0u64; 17];
    args[0] = u64::from(node) | ((address & 0xffff_fffe) | 1) << 32;
    args[1] = (address >> 32) | REQUEST_ACK_BLOCKING << 32;
    let status = Smc::call64(PM_SIP_SVC | PM_REQUEST_WAKEUP, args)[0] as u32 as i32;
    if status == 0 { Ok(()) } else { Err(status) }
}
