//! The SMMU model as a platform device: forwarded accesses in, `proto::forward` statuses out, the
//! interrupt output on PL line `line` (`board::pl::irq_line::SMMU_CONTEXT`).

use super::Smmu500Model;
use crate::models::MmioDevice;
use proto::forward::Status;
use std::sync::Arc;

#[derive(Debug)]
pub struct SmmuDevice {
    model: Arc<Smmu500Model>,
    line: u8,
}

impl SmmuDevice {
    /// The device for `model`; bus masters translate through the same `Arc`.
    pub fn new(model: Arc<Smmu500Model>, line: u8) -> Self {
        Self { model, line }
    }

    pub fn model(&self) -> &Arc<Smmu500Model> {
        &self.model
    }
}

impl MmioDevice for SmmuDevice {
    fn name(&self) -> &'static str {
        "smmu"
    }

    fn read(&mut self, offset: u64, size: u32) -> Result<u128, Status> {
        Ok(self.model.read(offset, size as usize)?)
    }

    fn write(&mut self, offset: u64, size: u32, value: u128) -> Result<(), Status> {
        Ok(self.model.write(offset, size as usize, value)?)
    }

    fn irq_lines(&self) -> u16 {
        if self.model.irq() { 1 << self.line } else { 0 }
    }
}
