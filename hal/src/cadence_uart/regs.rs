//! Cadence UART (Xilinx `uart` / `ps7_uart`) register block.
//!
//! Source: UG1087 (Zynq UltraScale+ MPSoC Register Reference), module UART; the test below
//! checks the offsets against it.

use tock_registers::{
    register_structs,
    registers::{ReadOnly, ReadWrite, WriteOnly},
};

pub use fields::*;

// The items the macro generates (Register, SET, CLEAR, Value) cannot carry docs of their own;
// each register and field is documented where it is declared.
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! [u32,
        /// Control register (CR).
        pub CONTROL [
            RXRST OFFSET(0) NUMBITS(1) [],
            TXRST OFFSET(1) NUMBITS(1) [],
            RX_EN OFFSET(2) NUMBITS(1) [],
            RX_DIS OFFSET(3) NUMBITS(1) [],
            TX_EN OFFSET(4) NUMBITS(1) [],
            TX_DIS OFFSET(5) NUMBITS(1) [],
            RSTTO OFFSET(6) NUMBITS(1) [],
            STTBRK OFFSET(7) NUMBITS(1) [],
            STPBRK OFFSET(8) NUMBITS(1) []
        ],
        /// Mode register (MR).
        pub MODE [
            CLKS OFFSET(0) NUMBITS(1) [],
            CHRL OFFSET(1) NUMBITS(2) [
                Bits8 = 0b00,
                Bits7 = 0b10,
                Bits6 = 0b11
            ],
            PAR OFFSET(3) NUMBITS(3) [
                Even = 0b000,
                Odd = 0b001,
                None = 0b100
            ],
            NBSTOP OFFSET(6) NUMBITS(2) [
                One = 0b00,
                OneAndHalf = 0b01,
                Two = 0b10
            ],
            CHMODE OFFSET(8) NUMBITS(2) [
                Normal = 0b00,
                AutoEcho = 0b01,
                LocalLoopback = 0b10,
                RemoteLoopback = 0b11
            ]
        ],
        /// Interrupt bits, shared by IER, IDR, IMR and ISR (ISR is write-1-to-clear).
        pub INTERRUPT [
            RTRIG OFFSET(0) NUMBITS(1) [],
            REMPTY OFFSET(1) NUMBITS(1) [],
            RFUL OFFSET(2) NUMBITS(1) [],
            TEMPTY OFFSET(3) NUMBITS(1) [],
            TFUL OFFSET(4) NUMBITS(1) [],
            ROVR OFFSET(5) NUMBITS(1) [],
            FRAME OFFSET(6) NUMBITS(1) [],
            PARE OFFSET(7) NUMBITS(1) [],
            TIMEOUT OFFSET(8) NUMBITS(1) [],
            DMSI OFFSET(9) NUMBITS(1) [],
            TTRIG OFFSET(10) NUMBITS(1) [],
            TNFUL OFFSET(11) NUMBITS(1) [],
            TOVR OFFSET(12) NUMBITS(1) []
        ],
        /// Channel status register (SR).
        pub STATUS [
            RTRIG OFFSET(0) NUMBITS(1) [],
            REMPTY OFFSET(1) NUMBITS(1) [],
            RFUL OFFSET(2) NUMBITS(1) [],
            TEMPTY OFFSET(3) NUMBITS(1) [],
            TFUL OFFSET(4) NUMBITS(1) [],
            RACTIVE OFFSET(10) NUMBITS(1) [],
            TACTIVE OFFSET(11) NUMBITS(1) [],
            FDELT OFFSET(12) NUMBITS(1) [],
            TTRIG OFFSET(13) NUMBITS(1) [],
            TNFUL OFFSET(14) NUMBITS(1) []
        ],
        /// Baud rate generator (BAUDGEN): CD divides sel_clk.
        pub BAUDGEN [
            CD OFFSET(0) NUMBITS(16) []
        ],
        /// Baud rate divider (BDIV): BDIV + 1 samples per bit.
        pub BAUDDIV [
            BDIV OFFSET(0) NUMBITS(8) []
        ]
    ];
}

register_structs! {
    /// The UART register block (UG1087, module UART).
    pub UartRegisters {
        /// Control_reg0: enable and reset of the transmitter and receiver.
        (0x00 => pub control: ReadWrite<u32, CONTROL::Register>),
        /// Mode_reg0: character format and channel mode.
        (0x04 => pub mode: ReadWrite<u32, MODE::Register>),
        /// Intrpt_en_reg0: write 1 to enable an interrupt.
        (0x08 => pub intr_enable: WriteOnly<u32, INTERRUPT::Register>),
        /// Intrpt_dis_reg0: write 1 to disable an interrupt.
        (0x0c => pub intr_disable: WriteOnly<u32, INTERRUPT::Register>),
        /// Intrpt_mask_reg0: the enabled interrupts.
        (0x10 => pub intr_mask: ReadOnly<u32, INTERRUPT::Register>),
        /// Chnl_int_sts_reg0: raised interrupts, write 1 to clear.
        (0x14 => pub intr_status: ReadWrite<u32, INTERRUPT::Register>),
        /// Baud_rate_gen_reg0.
        (0x18 => pub baud_gen: ReadWrite<u32, BAUDGEN::Register>),
        /// Rcvr_timeout_reg0.
        (0x1c => pub rx_timeout: ReadWrite<u32>),
        /// Rcvr_FIFO_trigger_level0.
        (0x20 => pub rx_trigger: ReadWrite<u32>),
        /// Modem_ctrl_reg0.
        (0x24 => pub modem_ctrl: ReadWrite<u32>),
        /// Modem_sts_reg0.
        (0x28 => pub modem_status: ReadWrite<u32>),
        /// Channel_sts_reg0: FIFO states.
        (0x2c => pub status: ReadOnly<u32, STATUS::Register>),
        /// TX_RX_FIFO0: write to send a byte, read to take one.
        (0x30 => pub fifo: ReadWrite<u32>),
        /// Baud_rate_divider_reg0.
        (0x34 => pub baud_div: ReadWrite<u32, BAUDDIV::Register>),
        /// Flow_delay_reg0.
        (0x38 => pub flow_delay: ReadWrite<u32>),
        (0x3c => _reserved0),
        /// Tx_FIFO_trigger_level0.
        (0x44 => pub tx_trigger: ReadWrite<u32>),
        (0x48 => @END),
    }
}

/// Size of one UART's register window.
pub const WINDOW_SIZE: usize = 0x1000;

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};

    /// Offsets from UG1087, module UART.
    #[test]
    fn offsets_match_ug1087() {
        assert_eq!(offset_of!(UartRegisters, control), 0x00);
        assert_eq!(offset_of!(UartRegisters, mode), 0x04);
        assert_eq!(offset_of!(UartRegisters, intr_enable), 0x08);
        assert_eq!(offset_of!(UartRegisters, intr_disable), 0x0c);
        assert_eq!(offset_of!(UartRegisters, intr_mask), 0x10);
        assert_eq!(offset_of!(UartRegisters, intr_status), 0x14);
        assert_eq!(offset_of!(UartRegisters, baud_gen), 0x18);
        assert_eq!(offset_of!(UartRegisters, rx_timeout), 0x1c);
        assert_eq!(offset_of!(UartRegisters, rx_trigger), 0x20);
        assert_eq!(offset_of!(UartRegisters, status), 0x2c);
        assert_eq!(offset_of!(UartRegisters, fifo), 0x30);
        assert_eq!(offset_of!(UartRegisters, baud_div), 0x34);
        assert_eq!(offset_of!(UartRegisters, tx_trigger), 0x44);
        assert_eq!(size_of::<UartRegisters>(), 0x48);
    }
}
