//! `cargo xtask`: the one entry point for building, running, testing and packaging.
//!
//! Every subcommand is what CI and the README use; nothing else is needed on top of cargo.

mod bench;
mod bootbin;
mod c_lib;
mod c_programs;
mod doc_crates;
mod doc_links;
mod host_cpu;
mod images;
mod mpi;
mod outcome;
mod qemu_run;
#[cfg(feature = "mpi")]
mod rank_run;
mod setup;
mod shmem_launch;
mod size;
mod soak_tests_sos;
mod terminal;
mod testing;
mod toolchain;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Build, run, test and package the Unimem stack")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The interconnect's behaviour: from a config file, then overridden by flags.
#[derive(clap::Args, Clone, Debug, Default)]
struct LinkArgs {
    /// A platform config file with an `[interconnect]` table (latency_us, loss, duplicate,
    /// reorder, seed).
    #[arg(long)]
    link_config: Option<PathBuf>,
    /// Latency per hop, microseconds.
    #[arg(long)]
    latency_us: Option<f64>,
    /// Probability that a packet is lost on a link.
    #[arg(long)]
    loss: Option<f64>,
    /// Probability that a packet is duplicated on a link.
    #[arg(long)]
    duplicate: Option<f64>,
    /// Probability that a packet is overtaken by later ones.
    #[arg(long)]
    reorder: Option<f64>,
    /// Seed of the links' random choices (loss, duplication, reordering), so that a lossy run
    /// can be repeated.
    #[arg(long)]
    seed: Option<u64>,
}

impl LinkArgs {
    fn config(&self) -> anyhow::Result<qemu_virt::LinkConfig> {
        let mut config = match &self.link_config {
            Some(path) => qemu_virt::LinkConfig::from_toml(&std::fs::read_to_string(path)?)?,
            None => qemu_virt::LinkConfig::default(),
        };
        config.latency_us = self.latency_us.unwrap_or(config.latency_us);
        config.loss = self.loss.unwrap_or(config.loss);
        config.duplicate = self.duplicate.unwrap_or(config.duplicate);
        config.reorder = self.reorder.unwrap_or(config.reorder);
        config.seed = self.seed.unwrap_or(config.seed);
        config.validate()?;
        Ok(config)
    }
}

/// How `qemu` and `run` start each node.
#[derive(clap::Args, Clone, Debug)]
struct NodeArgs {
    /// Start QEMU's gdb stub (paused) and print how to attach to the A53 and the R5.
    #[arg(long)]
    gdb: bool,
    /// Extra boot arguments for the kernel (docs/hw/boot-args.md), e.g. `smmu-stall`.
    #[arg(long)]
    boot_args: Option<String>,
}

/// The options of every command that boots a cluster.
#[derive(clap::Args, Clone, Debug)]
struct ClusterArgs {
    /// Number of nodes (1 to 8).
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// Use the release builds of the images (fw-release) instead of the development builds.
    #[arg(long)]
    release: bool,
    /// Write a Chrome trace-event JSON file (Perfetto) of forwarded accesses, interrupts and
    /// packets.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Seconds a run without a terminal may take before its unfinished nodes count as hung.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// `qemu`: spread the nodes over this many MPI ranks (processes, on this host or those of
    /// `--hosts`), each running its share (docs/architecture.md, "A cluster over several ranks").
    #[arg(long, default_value_t = 1)]
    ranks: usize,
    /// `qemu --ranks`: the hosts to run the ranks on, an Open MPI hostfile (passed to mpirun as
    /// `--hostfile`); without it every rank runs on this host, over TCP on loopback.
    #[arg(long)]
    hosts: Option<PathBuf>,
    #[command(flatten)]
    link: LinkArgs,
}

impl ClusterArgs {
    fn options(&self) -> anyhow::Result<qemu_run::ClusterOptions> {
        Ok(qemu_run::ClusterOptions {
            nodes: self.nodes,
            release: self.release,
            trace: self.trace.clone(),
            link: self.link.config()?,
            timeout: std::time::Duration::from_secs(self.timeout),
            ranks: self.ranks,
            hosts: self.hosts.clone(),
        })
    }
}

#[derive(Subcommand)]
enum Command {
    /// Build the A53 kernel (and its test image) and the R5 firmware.
    Build {
        /// Build the release images (fw-release) instead of the development ones (fw-dev).
        #[arg(long)]
        release: bool,
        /// Build for the QFDB board instead of QEMU's zcu102.
        #[arg(long)]
        qfdb: bool,
    },
    /// Build the C library for C programs (`libunimem_c.a`) and print where it and its
    /// headers are.
    CLib,
    /// Show text/data/bss of both images against their budgets (fails when over).
    Size {
        /// Measure the release images (fw-release) instead of the development ones (fw-dev).
        #[arg(long)]
        release: bool,
    },
    /// Boot the emulated system and show every console, decoded. Without a terminal the run
    /// ends when every node has finished its demo; the exit status says whether all went well.
    Qemu {
        #[command(flatten)]
        cluster: ClusterArgs,
        #[command(flatten)]
        node: NodeArgs,
    },
    /// Build PROGRAM, boot the cluster and run it on one node or on every node; exits with the
    /// program's status. PROGRAM is a program's name (a53-kernel/user/src/bin/NAME.rs or
    /// a53-kernel/user/c-programs/NAME.c) or C source files (prog.c [more.c ...]), compiled into
    /// a program named after the first.
    Run {
        /// A program's name, or C source files.
        #[arg(required = true, num_args = 1.., value_name = "PROGRAM")]
        program: Vec<String>,
        #[command(flatten)]
        cluster: ClusterArgs,
        #[command(flatten)]
        node: NodeArgs,
        /// Run it on this node only (the others serve); on every node without it.
        #[arg(long)]
        on: Option<usize>,
        /// The program's arguments (after `--`).
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Run a workload many times and count the failures: `demo` (`cargo xtask qemu` without a
    /// terminal); or a long one: `rdma` (`--transfers N` random transfers on 4 nodes over lossy
    /// links, with its counters); or `tests-sos` (every unit test of the OpenSHMEM suite in
    /// `--dir`, each run as `cargo xtask run FILE` runs it, on `--nodes`).
    Soak {
        /// The workload: `demo`, `rdma` or `tests-sos`.
        name: String,
        #[command(flatten)]
        cluster: ClusterArgs,
        /// `demo`: how many runs.
        #[arg(long, default_value_t = 20)]
        runs: usize,
        /// `rdma`: transfers in all (each a write and its read back).
        #[arg(long, default_value_t = 10_000)]
        transfers: u64,
        /// `tests-sos`: where the suite was cloned.
        #[arg(long, default_value = "/tmp/tests-sos")]
        dir: PathBuf,
        /// `tests-sos`: only the unit tests whose path contains this.
        #[arg(long)]
        only: Option<String>,
    },
    /// Run every test: host unit tests, then the on-target test images in QEMU.
    Test {
        /// Run only tests whose name contains this.
        filter: Option<String>,
        /// List the tests instead of running them.
        #[arg(long)]
        list: bool,
        /// Test the release images (fw-release) instead of the development ones (fw-dev).
        #[arg(long)]
        release: bool,
        /// Skip the host unit tests.
        #[arg(long)]
        target_only: bool,
        /// Skip the on-target tests.
        #[arg(long)]
        host_only: bool,
        /// Run the on-target tests on a board behind this serial port instead of QEMU.
        #[arg(long)]
        serial: Option<PathBuf>,
        /// Write a Chrome trace of every QEMU run into this directory (one file per run).
        #[arg(long)]
        trace_dir: Option<PathBuf>,
        /// The serial port's speed, with `--serial`.
        #[arg(long, default_value_t = 115_200)]
        baud: u32,
    },
    /// Run a benchmark and print its figures (`name: value unit`): platform, ranks, gsas, rdma,
    /// pagefault, sockets, idle, shmem, active, mpi-link.
    Bench {
        /// The benchmark: platform, ranks, gsas, rdma, pagefault, sockets, idle, shmem, active or
        /// mpi-link.
        name: String,
        /// Measure the development build (fw-dev) instead of the release build (fw-release).
        #[arg(long)]
        dev: bool,
        /// `platform`: also print where a forwarded access spends its time.
        #[arg(long)]
        breakdown: bool,
        /// `ranks` (and `platform`'s part of it): two short repetitions; `idle`: 2 s a measure
        /// instead of 10; `shmem`: a few repetitions of each measure. To check that it runs,
        /// not for its figures.
        #[arg(long)]
        quick: bool,
        /// Write a Chrome trace of every emulated run into this directory.
        #[arg(long)]
        trace_dir: Option<PathBuf>,
    },
    /// Write a ZynqMP boot image (BOOT.bin) from FSBL, PMU firmware, bitstream, ATF and our
    /// images, or dump and verify one.
    Bootbin(bootbin::BootbinArgs),
    /// Write an SD card image (MBR + FAT32) holding a BOOT.bin.
    Sdimage(bootbin::SdimageArgs),
    /// Merge the Chrome traces of the ranks of one cluster (one file per rank) into one, on one
    /// time line.
    TraceMerge {
        /// The merged trace.
        #[arg(short, long)]
        output: PathBuf,
        /// The ranks' trace files.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
    },
    /// rustfmt check and clippy (warnings denied) for the host and both targets.
    Lint,
    /// One rank of a cluster spread over MPI ranks, as `qemu --ranks` starts it under mpirun.
    #[cfg(feature = "mpi")]
    #[command(hide = true)]
    Rank {
        /// Nodes in the whole cluster.
        #[arg(long)]
        nodes: usize,
        #[arg(long)]
        qemu: PathBuf,
        #[arg(long)]
        kernel: PathBuf,
        #[arg(long)]
        r5: Option<PathBuf>,
        #[arg(long)]
        store: PathBuf,
        #[arg(long, default_value = "")]
        boot_args: String,
        /// Seconds before the rank's unfinished nodes count as hung.
        #[arg(long)]
        timeout: u64,
        /// The run's trace: this rank writes its own beside it (FILE.rankR.json).
        #[arg(long)]
        trace: Option<PathBuf>,
        /// The first this many datagrams each rank sends are lost (`lose_first` of the
        /// launcher's `--link-config`, which has no flag of its own).
        #[arg(long, default_value_t = 0)]
        lose_first: u64,
        #[command(flatten)]
        link: LinkArgs,
    },
    /// Install what the build and the runs need: the toolchain components (rust-src, clippy,
    /// rustfmt) with rustup, QEMU 10 (Debian bookworm-backports), the C cross compiler and
    /// picolibc for C programs, and Open MPI with libclang for the MPI link (Debian bookworm); or
    /// say how.
    Setup,
}

/// The name of the program `run` runs: a program's name, or C sources compiled into one (built
/// with the others in this invocation).
fn program_to_run(words: Vec<String>) -> anyhow::Result<String> {
    if !words.iter().any(|w| w.ends_with(".c")) {
        return match <[String; 1]>::try_from(words) {
            Ok([name]) => Ok(name),
            Err(words) => Err(anyhow::anyhow!("one program name, or C source files; not {}", words.join(" "))),
        };
    }
    let program = c_programs::CProgram::from_sources(words.into_iter().map(PathBuf::from).collect())?;
    let name = program.name.clone();
    c_programs::add(program)?;
    Ok(name)
}

/// The path this xtask was started as, taken when it starts: building the MPI xtask
/// (`mpi::build_ranks`) links `target/debug/xtask` anew, after which the running xtask's own path
/// reads "... (deleted)" though the same file is back under its name.
static STARTED_AS: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// [`STARTED_AS`]: what runs `cargo xtask ...` as a child, as the user's command would.
pub fn started_as() -> PathBuf {
    STARTED_AS.get_or_init(|| std::env::current_exe().unwrap_or_else(|_| "cargo-xtask".into())).clone()
}

fn main() {
    started_as();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Build { release, qfdb } => images::build_all(images::Options { release, qfdb }).map(drop),
        Command::CLib => c_lib::build_c_lib(images::Options::default()).map(|archive| {
            println!("built {}", archive.display());
            println!("headers in {}", c_lib::include_dir().display());
        }),
        Command::Size { release } => size::run(release),
        Command::Qemu { cluster, node: NodeArgs { gdb, boot_args } } => {
            cluster.options().and_then(|cluster| qemu_run::qemu(qemu_run::Options { cluster, gdb, boot_args }))
        }
        #[cfg(feature = "mpi")]
        Command::Rank { nodes, qemu, kernel, r5, store, boot_args, timeout, trace, lose_first, link } => {
            link.config().and_then(|link| {
                let link = qemu_virt::LinkConfig { lose_first, ..link };
                let timeout = std::time::Duration::from_secs(timeout);
                rank_run::rank(rank_run::RankOptions {
                    nodes,
                    qemu,
                    kernel,
                    r5,
                    store,
                    boot_args,
                    link,
                    timeout,
                    trace,
                })
            })
        }
        Command::Run { program, cluster, node: NodeArgs { gdb, boot_args }, on, args } => program_to_run(program)
            .and_then(|program| {
                let run = |cluster| qemu_run::RunOptions { cluster, gdb, boot_args, program, on, args };
                cluster.options().and_then(|cluster| qemu_run::run(run(cluster)))
            }),
        Command::Soak { name, cluster, runs, transfers, dir, only } => match name.as_str() {
            "demo" => cluster.options().and_then(|cluster| qemu_run::soak_demo(cluster, runs)),
            "rdma" => cluster.options().and_then(|c| {
                let link = (c.link != qemu_virt::LinkConfig::default()).then_some(c.link);
                bench::soak_rdma(transfers, link, c.release)
            }),
            "tests-sos" => soak_tests_sos::run(&dir, cluster.nodes, cluster.timeout, only.as_deref()),
            other => Err(anyhow::anyhow!("no soak `{other}`; the soaks are: demo, rdma, tests-sos")),
        },
        Command::Test { filter, list, release, target_only, host_only, serial, baud, trace_dir } => {
            testing::run(testing::Options {
                filter,
                list,
                release,
                host: !target_only,
                target: !host_only,
                serial,
                baud,
                trace_dir,
            })
        }
        Command::Bench { name, dev, breakdown, quick, trace_dir } => {
            bench::run(&name, bench::Options { release: !dev, breakdown, quick, trace_dir: trace_dir.as_deref() })
        }
        Command::Bootbin(args) => bootbin::run(args),
        Command::Sdimage(args) => bootbin::sdimage(args),
        Command::TraceMerge { output, inputs } => {
            let inputs: Vec<&std::path::Path> = inputs.iter().map(PathBuf::as_path).collect();
            qemu_virt::trace::merge(&inputs, &output)
                .map(|events| println!("{events} events in {}", output.display()))
                .map_err(Into::into)
        }
        Command::Lint => images::lint(),
        Command::Setup => toolchain::setup(),
    };
    match result {
        Ok(()) => {}
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// Every argument of every command says what it is in `--help`.
    #[test]
    fn every_option_has_a_line_of_help() {
        let cli = Cli::command();
        let mut missing = Vec::new();
        for command in cli.get_subcommands() {
            for arg in command.get_arguments() {
                let builtin = matches!(arg.get_id().as_str(), "help" | "version");
                if !builtin && arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{} {}", command.get_name(), arg.get_id()));
                }
            }
        }
        assert!(missing.is_empty(), "without help: {missing:?}");
    }
}
