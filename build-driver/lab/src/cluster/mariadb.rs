//! The cluster's private MariaDB (own data directory, socket and port; never the system
//! service): installed with `mariadb-install-db`, started as `mariadbd`, and given the
//! accounting database's account.

use super::config::CLIENT_TIMEOUT;
use super::config::Layout;
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::{read_bounded, run_bounded};
use driver_common::util::process::file_tail;
use std::process::Command;
use std::time::Duration;
use xshell::{Shell, cmd};

/// `mariadb-install-db` into the cluster's data directory (never the system's).
pub(super) fn install(sh: &Shell, l: &Layout) -> Result<()> {
    let data = l.mysql_data();
    let log = l.logs().join("mariadb-install.log");
    let user = super::host::current_user()?.0;
    let out = run_bounded(
        Command::from(cmd!(
            sh,
            "mariadb-install-db --no-defaults --user={user} --datadir={data} --auth-root-authentication-method=socket --skip-test-db"
        )),
        Duration::from_secs(120),
    )
    .map_err(|e| {
        e.context(
            "mariadb-install-db (is Debian's mariadb-server installed? ci/setup-debian.sh installs it)",
        )
    })?;
    let mut text = out.stdout.clone();
    text.extend_from_slice(&out.stderr);
    std::fs::write(&log, &text).map_err(|e| Error::io(&log, e))?;
    if !out.status.success() {
        return Err(Error::Scenario(format!(
            "mariadb-install-db failed ({}); last lines of {}:\n{}",
            out.status,
            log.display(),
            file_tail(&log, 20)
        )));
    }
    Ok(())
}

/// The private `mariadbd`: own data directory, socket, port on 127.0.0.1, error log; the
/// InnoDB settings slurmdbd checks at start.
pub(super) fn server(sh: &Shell, l: &Layout, port: u16) -> Result<Command> {
    let (data, sock) = (l.mysql_data(), l.mysql_socket());
    let pid = l.pids().join("mariadb.pid");
    let err = l.daemon_log("mariadb");
    let user = super::host::current_user()?.0;
    let port = port.to_string();
    Ok(Command::from(cmd!(
        sh,
        "mariadbd --no-defaults --user={user} --datadir={data} --socket={sock} --port={port} --bind-address=127.0.0.1 --pid-file={pid} --log-error={err} --skip-name-resolve --innodb-buffer-pool-size=128M --innodb-log-file-size=64M --innodb-lock-wait-timeout=900"
    )))
}

pub(super) fn client(l: &Layout, sql: &str) -> Result<Command> {
    let sh = Shell::new().map_err(Error::Shell)?;
    let socket = format!("--socket={}", l.mysql_socket().display());
    Ok(Command::from(cmd!(
        sh,
        "mariadb --no-defaults {socket} -u root -e {sql}"
    )))
}

pub(super) fn ready(l: &Layout) -> Result<bool> {
    Ok(
        run_bounded(client(l, "SELECT 1")?, Duration::from_secs(10))?
            .status
            .success(),
    )
}

/// The `slurm` account (password from slurmdbd.conf) with rights on slurmdbd's database.
pub(super) fn create_account(l: &Layout) -> Result<()> {
    let conf = std::fs::read_to_string(l.dbd_conf()).map_err(|e| Error::io(l.dbd_conf(), e))?;
    let pass = conf
        .lines()
        .find_map(|x| x.strip_prefix("StoragePass="))
        .ok_or_else(|| Error::file(l.dbd_conf(), "no StoragePass"))?;
    let (user, db) = (super::render::DB_USER, super::render::DB_NAME);
    let sql = format!(
        "CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY '{pass}'; GRANT ALL ON {db}.* TO '{user}'@'127.0.0.1';"
    );
    read_bounded(client(l, &sql)?, CLIENT_TIMEOUT).map(|_| ())
}
