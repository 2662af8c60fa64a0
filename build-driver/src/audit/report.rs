//! What an audit found: each (plugin, program) pair with unresolved imports or missing
//! libraries, and the counts the summary prints.

use super::image::Format;
use super::loaders;
use std::collections::BTreeSet;

/// Unresolved imports of one plugin in one program's process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub plugin: String,
    pub program: String,
    pub symbols: BTreeSet<String>,
    /// Libraries that could not be found (`name (needed by file)`).
    pub libraries: BTreeSet<String>,
}

#[derive(Debug)]
pub struct Report {
    /// Which rows of the loader table applied.
    pub line: loaders::Line,
    pub format: Format,
    pub arch: String,
    pub plugins: usize,
    pub pairs: usize,
    pub findings: Vec<Finding>,
    /// Plugins whose type the table does not know.
    pub unknown: Vec<String>,
    /// Programs named by the table but not installed in the prefix.
    pub not_installed: BTreeSet<String>,
}

impl Report {
    pub fn unresolved_symbols(&self) -> usize {
        self.findings.iter().map(|f| f.symbols.len()).sum()
    }

    pub fn summary(&self) -> String {
        format!(
            "{} plugins, {} (plugin, program) pairs, {} pairs with unresolved symbols ({} symbols, {} missing libraries), {} plugins of unknown type",
            self.plugins,
            self.pairs,
            self.findings.len(),
            self.unresolved_symbols(),
            self.findings
                .iter()
                .map(|f| f.libraries.len())
                .sum::<usize>(),
            self.unknown.len()
        )
    }
}
