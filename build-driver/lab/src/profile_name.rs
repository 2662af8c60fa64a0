//! A cluster profile's name (`--profile NAME`): what the command line parses and what
//! cluster/profile.rs's table, which says what each profile writes, is keyed by.

/// A named profile (`--profile NAME`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// A typical site: cores and memory consumable, every job gets its share of memory.
    #[default]
    Default,
    /// The proof of concept's slurm.conf (the seed article).
    Poc,
    /// The harness's earlier configuration: no RealMemory, no DefMemPerCPU.
    Cpu,
    /// `default` plus the macOS process plugins and OverMemoryKill.
    #[serde(rename = "macos-native")]
    MacosNative,
    /// What a typical Linux site runs: the cgroup process plugins, `CgroupPlugin=autodetect`.
    Site,
}
