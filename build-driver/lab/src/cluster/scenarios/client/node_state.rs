//! The scenarios' view of the nodes: each node's fields as slurmctld has them, its state and
//! drain reason, waiting for it to drain or be usable again, resuming it, and its slurmd's
//! record.

use super::super::super::daemon::Daemon;
use super::super::super::procs::ProcRecord;
use super::{Ctx, JOB_TIMEOUT, POLL, field, parse_fields};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::poll;
use std::time::Duration;

impl Ctx<'_> {
    /// The first node's name (`node1`): the node of the one-node scenarios.
    /// The first slurmd's record (its PID, ...).
    pub fn slurmd_record(&self) -> Result<ProcRecord> {
        self.cluster
            .record(Daemon::Slurmd(0))
            .cloned()
            .ok_or_else(|| Error::Scenario("slurmd is not recorded".into()))
    }

    pub fn first_node(&self) -> String {
        self.cluster
            .nodes()
            .first()
            .map_or_else(|| "node1".to_string(), |n| n.name.clone())
    }

    /// The first node's fields from `scontrol show node -d -o` (`-d` adds GresUsed).
    pub fn node(&self) -> Result<Vec<(String, String)>> {
        self.node_fields(&self.first_node())
    }

    /// A node's fields from `scontrol show node -d -o`.
    pub fn node_fields(&self, name: &str) -> Result<Vec<(String, String)>> {
        Ok(parse_fields(
            &self.read("scontrol", &["show", "node", "-d", "-o", name])?,
        ))
    }

    pub fn node_field(&self, key: &str) -> Result<String> {
        self.node()?
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .ok_or_else(|| Error::Scenario(format!("scontrol show node: no {key}=")))
    }

    /// A node's state as slurmctld keeps it (`scontrol`: `IDLE`, `MIXED`, `IDLE+DRAIN`, ...)
    /// and its allocated CPUs. sinfo is not used for this: after restarts it was seen to
    /// report `mixed 1/1/0/2` for over 30 s while scontrol said `IDLE`, `CPUAlloc=0` and the
    /// queue was empty (native and darwin alike).
    pub fn state_of(&self, name: &str) -> Result<(String, String)> {
        let f = self.node_fields(name)?;
        Ok((field(&f, "State").into(), field(&f, "CPUAlloc").into()))
    }

    /// The first node's `State` and `Reason` (`scontrol show node`).
    pub fn state_reason(&self) -> Result<(String, String)> {
        let f = self.node()?;
        Ok((field(&f, "State").into(), field(&f, "Reason").into()))
    }

    /// `scontrol update NodeName=<first node> State=RESUME`, then wait until it is idle.
    pub fn resume_node(&self, timeout: Duration) -> Result<()> {
        let node = format!("NodeName={}", self.first_node());
        self.read("scontrol", &["update", &node, "State=RESUME"])?;
        self.wait_node_idle(timeout)
    }

    /// Wait for the first node to be drained (or draining) with a reason containing
    /// `needle` (any reason when empty); returns its state and reason. A daemon that died
    /// meanwhile is an error at once.
    pub fn wait_drained(&self, needle: &str) -> Result<(String, String)> {
        poll(
            &format!("node {} to drain ({needle})", self.first_node()),
            JOB_TIMEOUT,
            POLL,
            || {
                self.cluster.check_daemons()?;
                let (state, reason) = self.state_reason()?;
                Ok((state.contains("DRAIN") && reason.contains(needle)).then_some((state, reason)))
            },
        )
    }

    /// Wait until field `key` of node `name` satisfies `ok` (`what` says what is awaited);
    /// its value then. The error has the last value seen.
    pub fn wait_node_value(
        &self,
        name: &str,
        key: &str,
        what: &str,
        ok: impl Fn(&str) -> bool,
    ) -> Result<String> {
        let mut last = None;
        poll(what, Duration::from_secs(60), POLL, || {
            let v = self.node_value(name, key)?;
            let done = ok(&v);
            last = Some(v.clone());
            Ok(done.then_some(v))
        })
        .map_err(|e| Error::Scenario(format!("{e}; last {key}={last:?}")))
    }

    /// If node `name` is drained: resume it; its drain reason (whole: sinfo's `%E`).
    pub fn resume_if_drained(&self, name: &str) -> Result<Option<String>> {
        if !self.node_value(name, "State")?.contains("DRAIN") {
            return Ok(None);
        }
        let reason = self.read("sinfo", &["-h", "-n", name, "-o", "%E"])?;
        let node = format!("NodeName={name}");
        self.read("scontrol", &["update", &node, "State=RESUME"])?;
        Ok(Some(reason.trim().to_string()))
    }

    /// One field of node `name` (`scontrol show node -d -o`); empty when it is absent.
    pub fn node_value(&self, name: &str, key: &str) -> Result<String> {
        Ok(field(&self.node_fields(name)?, key).to_string())
    }

    /// Wait until every node is usable: `State=IDLE` (no drain or completing flag), no CPU
    /// allocated.
    pub fn wait_node_idle(&self, timeout: Duration) -> Result<()> {
        let names: Vec<String> = self
            .cluster
            .nodes()
            .iter()
            .map(|n| n.name.clone())
            .collect();
        let mut last = None;
        poll(
            &format!("node(s) {} to be idle", names.join(",")),
            timeout,
            POLL,
            || {
                self.cluster.check_daemons()?;
                let mut busy = Vec::new();
                for n in &names {
                    let (state, alloc) = self.state_of(n)?;
                    if !(state == "IDLE" && alloc == "0") {
                        busy.push(format!("{n} State={state} CPUAlloc={alloc}"));
                    }
                }
                let idle = busy.is_empty();
                last = Some(busy.join(", "));
                Ok(idle.then_some(()))
            },
        )
        .map_err(|e| {
            let jobs = self
                .read("squeue", &["-h", "-t", "all", "-o", "%i %T %R"])
                .unwrap_or_default();
            let active: Vec<&str> = jobs
                .lines()
                .filter(|l| {
                    !l.contains("COMPLETED") && !l.contains("FAILED") && !l.contains("CANCELLED")
                })
                .collect();
            Error::Scenario(format!("{e}; last {last:?}; unfinished jobs: {active:?}"))
        })
    }
}
