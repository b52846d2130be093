//! The APU's IPI channel (`hal::zynqmp_ipi`, `docs/hw/ipi.md`): the kernel's doorbell for the
//! R5, which QEMU's RPU cannot receive. A trigger of RPU0 wakes the R5 through the platform
//! (`r5_wake`); OBS reads 0 at once, since the R5 on QEMU has no ISR to clear. The channel's
//! own interrupt (other agents triggering the APU) never rises: nothing here triggers it.

use super::{MmioDevice, ModelError};
use crate::r5_wake::{Cause, R5Wake};
use crate::reg_offset;
use hal::zynqmp_ipi::{IpiRegisters as R, agent};
use proto::forward::Status;
use std::sync::{Arc, OnceLock};

pub struct IpiModel {
    /// Senders masked at this channel (1 = masked; all at reset).
    imr: u32,
    /// Senders pending at this channel (always 0: no agent of the platform triggers the APU).
    isr: u32,
    /// The node's R5, once its QEMU runs with one.
    r5: Arc<OnceLock<Arc<R5Wake>>>,
    /// Triggers of RPU0 taken.
    pub doorbells: u64,
}

impl IpiModel {
    pub fn new(r5: Arc<OnceLock<Arc<R5Wake>>>) -> Self {
        Self { imr: agent::ALL, isr: 0, r5, doorbells: 0 }
    }
}

impl MmioDevice for IpiModel {
    fn name(&self) -> &'static str {
        "ipi"
    }

    fn read(&mut self, offset: u64, size: u32) -> Result<u128, Status> {
        if size != 4 {
            return Err(ModelError::AccessSize { offset, size: size as usize }.into());
        }
        let value = match offset {
            o if o == reg_offset!(R, obs) => 0,
            o if o == reg_offset!(R, isr) => self.isr,
            o if o == reg_offset!(R, imr) => self.imr,
            o if o == reg_offset!(R, trig) || o == reg_offset!(R, ier) || o == reg_offset!(R, idr) => {
                return Err(ModelError::WriteOnly { offset }.into());
            }
            _ => return Err(ModelError::Unmapped { offset }.into()),
        };
        Ok(u128::from(value))
    }

    fn write(&mut self, offset: u64, size: u32, value: u128) -> Result<(), Status> {
        if size != 4 {
            return Err(ModelError::AccessSize { offset, size: size as usize }.into());
        }
        let bits = value as u32 & agent::ALL;
        match offset {
            o if o == reg_offset!(R, trig) => {
                if bits & agent::RPU0 != 0 {
                    self.doorbells += 1;
                    if let Some(r5) = self.r5.get() {
                        r5.wake(Cause::Ipi);
                    }
                }
            }
            o if o == reg_offset!(R, isr) => self.isr &= !bits,
            o if o == reg_offset!(R, ier) => self.imr &= !bits,
            o if o == reg_offset!(R, idr) => self.imr |= bits,
            o if o == reg_offset!(R, obs) || o == reg_offset!(R, imr) => {
                return Err(ModelError::ReadOnly { offset }.into());
            }
            _ => return Err(ModelError::Unmapped { offset }.into()),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::Ddr;
    use proto::ipc::IpcArea;
    use proto::r5_sleep::NO_TIMEOUT;
    use std::io::Read;
    use std::os::unix::net::UnixStream;
    use std::time::Duration;

    #[test]
    fn a_trigger_of_rpu0_wakes_a_sleeping_r5_and_the_registers_keep_their_access_rules() {
        let file = tempfile::NamedTempFile::new().unwrap();
        file.as_file().set_len(4 << 20).unwrap();
        let ddr = Arc::new(Ddr::open(file.path()).unwrap());
        let (platform_end, mut guest) = UnixStream::pair().unwrap();
        let slot = Arc::new(OnceLock::new());
        let _ = slot.set(Arc::new(R5Wake::new(ddr.clone(), platform_end)));
        let mut ipi = IpiModel::new(slot);
        let trig = reg_offset!(R, trig);
        // SAFETY: atomics in the test's DDR file.
        let area = unsafe { ddr.view::<IpcArea>(<board::zcu102_qemu::Zcu102Qemu as board::Board>::IPC_BASE) }.unwrap();
        ipi.write(trig, 4, u128::from(agent::RPU0)).unwrap();
        area.r5_sleep.begin(NO_TIMEOUT);
        ipi.write(trig, 4, u128::from(agent::RPU1)).unwrap();
        guest.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        let mut b = [0u8; 4];
        assert!(guest.read(&mut b).is_err(), "a running R5, or another target: no wake");
        ipi.write(trig, 4, u128::from(agent::RPU0 | agent::APU)).unwrap();
        assert_eq!(guest.read(&mut b).unwrap(), 1, "the sleep is woken");
        assert_eq!(ipi.doorbells, 2);
        assert_eq!(ipi.read(reg_offset!(R, obs), 4), Ok(0));
        assert_eq!(ipi.read(reg_offset!(R, imr), 4), Ok(u128::from(agent::ALL)), "all masked at reset");
        ipi.write(reg_offset!(R, ier), 4, u128::from(agent::RPU0)).unwrap();
        assert_eq!(ipi.read(reg_offset!(R, imr), 4), Ok(u128::from(agent::ALL & !agent::RPU0)));
        assert_eq!(ipi.read(trig, 4), Err(Status::Rejected), "write-only");
        assert_eq!(ipi.write(reg_offset!(R, obs), 4, 1), Err(Status::Rejected), "read-only");
        assert_eq!(ipi.write(trig, 8, 1), Err(Status::Rejected), "32-bit registers");
        assert_eq!(ipi.read(0x40, 4), Err(Status::Unmapped));
    }
}
