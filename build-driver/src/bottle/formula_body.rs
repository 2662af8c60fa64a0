//! The formula's methods: `def install` (the driver's fetch, deps and build-slurm from the
//! staged resources, then the LaunchDaemon plist), `def post_install` (the `var` directories:
//! pouring a bottle does not run `install`), the caveats, `service do` and `test do`.

use super::Layout;
use super::formula_spec::Spec;
use slurm_mac::service::plist::Daemon;

/// The service label of a formula: `org.slurm-on-mac.slurmd`, and for a versioned formula
/// its own (`org.slurm-on-mac.slurmd-25.11`), so two formulae never share a LaunchDaemon.
pub fn label(l: &Layout) -> String {
    let base = Daemon::Slurmd.label();
    if l.formula.contains('@') {
        format!("{base}-{}", l.line)
    } else {
        base.to_string()
    }
}

/// `def slurm_root`: the root of the root-owned copy of the keg (`slurm-mac copy-keg`), for
/// each Homebrew prefix a bottle pours into; the node tool's [`slurm_mac::keg::default_root`]
/// gives both, so the formula and the tool cannot disagree.
pub fn slurm_root(l: &Layout) -> String {
    let root = |triple| {
        Layout::new(&l.formula, &l.version, &l.line, triple)
            .map(|x| (x.homebrew_prefix.clone(), x.copy_root()))
            .unwrap_or_else(|_| (l.homebrew_prefix.clone(), l.copy_root()))
    };
    let ((_, arm_root), (intel_prefix, intel_root)) =
        (root("aarch64-apple-darwin"), root("x86_64-apple-darwin"));
    format!(
        r##"  # The root of the root-owned copy of this keg that slurmd runs from (`slurm-mac copy-keg`
  # prints it: as many bytes as HOMEBREW_PREFIX, which its files name).
  def slurm_root
    HOMEBREW_PREFIX.to_s == "{intel_prefix}" ? "{intel_root}" : "{arm_root}"
  end

"##
    )
}

/// `def install`: brew has fetched and sha256-checked every resource before it runs; the
/// tarballs go where the driver's deps step looks first (it checks each sha256 again).
pub fn install(s: &Spec) -> String {
    let mut copies = String::new();
    for d in s.resources {
        copies.push_str(&format!(
            "      cp resource(\"{}\").cached_download, downloads/\"{}\"\n",
            d.name, d.file
        ));
    }
    format!(
        r##"  def install
    resource("slurm-on-mac").stage(buildpath/"slurm-on-mac")
    cd "slurm-on-mac" do
      # Every third-party library is static and built here from the resources above.
      downloads = Pathname.pwd/"slurm-src/downloads"
      downloads.mkpath
{copies}      triple = Hardware::CPU.arm? ? "aarch64-apple-darwin" : "x86_64-apple-darwin"
      system "cargo", "xtask", "fetch", "--version", version.to_s, "--source", cached_download
      system "cargo", "xtask", "deps", "--target", triple, "--build-all"
{tls}      system "cargo", "xtask", "build-slurm", "--version", version.to_s,
             "--deps-prefix", "target/deps/#{{triple}}/prefix",
             "--prefix", prefix, "--sysconfdir", etc/"slurm", "--localstatedir", var{with_s2n}
      # The node tool (join, service, doctor, gres-conf), as a bottle's keg has it.
      system "cargo", "build", "--release", "--package", "slurm-mac", "--bin", "slurm-mac"
      bin.install "target/release/slurm-mac"
      # The LaunchDaemon plist `service do name macos:` copies (a bottle's keg has it too).
      # It runs the root-owned copy of this keg (`slurm-mac copy-keg`), never the keg itself.
      label = "{label}"
      plist = Utils.safe_popen_read(bin/"slurm-mac", "service", "print",
                                    "--prefix", "#{{slurm_root}}/opt/#{{name}}",
                                    "--log-dir", "#{{slurm_root}}/var/log/slurm")
      (prefix/"#{{label}}.plist").write plist.sub(">{base}<", ">#{{label}}<")
    end
  end

"##,
        label = label(s.layout),
        base = Daemon::Slurmd.label(),
        tls = if s.layout.has_tls() { S2N_STEP } else { "" },
        with_s2n = if s.layout.has_tls() {
            ",\n             \"--with-s2n\""
        } else {
            ""
        },
    )
}

/// Slurm's TLS (25.05 and later), as the bottle has it: s2n-tls from the crate pinned in
/// `slurm-src/s2n.toml` (cargo fetches it as it fetches the driver's crates; its sha256 is
/// checked before it is unpacked), static, against the deps' libcrypto.
const S2N_STEP: &str = r##"      # Slurm's TLS (tls/s2n): s2n-tls from the crate slurm-src/s2n.toml pins (sha256-checked).
      system "cargo", "xtask", "s2n", "--target", triple
"##;

/// `def post_install` (runs after a pour and after a source build) and the caveats.
pub fn post_install_and_caveats(l: &Layout) -> String {
    format!(
        r##"  def post_install
    (var/"log/slurm").mkpath
    (var/"spool/slurmd").mkpath
  end

  def caveats
    <<~EOS
      This Mac joins an existing Slurm cluster as a compute node (auth/slurm).
      slurmd runs as root, and this keg belongs to your user (any process of your uid could
      change it and become root), so slurmd runs from a root-owned copy of the keg:
      1. With the controller's slurm.key on this Mac (it must be the same key):
           sudo #{{opt_bin}}/slurm-mac copy-keg --keg #{{opt_prefix}} --key slurm.key
         (the copy: #{{slurm_root}}; its key and config: #{{slurm_root}}/etc/slurm/;
         run it again after every upgrade)
      2. Configless (the controller needs SlurmctldParameters=enable_configless):
           sudo #{{slurm_root}}/opt/#{{name}}/bin/slurm-mac service install --prefix #{{slurm_root}}/opt/#{{name}} --log-dir #{{slurm_root}}/var/log/slurm --conf-server <controller>
         or, with the cluster's slurm.conf in #{{slurm_root}}/etc/slurm/ (or a DNS SRV record
         _slurmctld._tcp naming the controller):
           sudo brew services start {formula}
      What stops this Mac from being a node (key, files root runs, name, port, plugins):
           sudo #{{slurm_root}}/opt/#{{name}}/bin/slurm-mac doctor --prefix #{{slurm_root}}/opt/#{{name}} --controller <controller>
      Client commands read #{{etc}}/slurm/slurm.conf, or the file SLURM_CONF names.
      Logs: #{{slurm_root}}/var/log/slurm/. Sleep: `caffeinate -s` (AC power only) keeps a Mac
      awake; see `slurm-mac service print --caffeinate`.
    EOS
  end

"##,
        formula = l.formula,
    )
}

/// `service do`: our own plist (brew's generated ones cannot say AbandonProcessGroup or the
/// NOFILE limits), run as root.
pub fn service(l: &Layout) -> String {
    format!(
        r##"  service do
    name macos: "{label}"
    require_root true
  end

"##,
        label = label(l)
    )
}

/// `test do`: `slurmd -C` detects this machine's CPUs and memory; `slurmd -G` loads the
/// gres/gpu plugin, which reads a generated gres.conf.
pub const TEST: &str = r##"  test do
    # slurmd -C detects this machine's CPUs and memory and prints its node line.
    output = shell_output("#{sbin}/slurmd -C")
    assert_match(/NodeName=\S+ CPUs=\d+ /, output)
    assert_match(/RealMemory=\d+/, output)

    # slurmd -G loads the gres/gpu plugin, which parses gres.conf, and prints the GRES.
    (testpath/"slurm.conf").write <<~EOS
      ClusterName=brewtest
      SlurmctldHost=localhost
      AuthType=auth/slurm
      CredType=cred/slurm
      GresTypes=gpu
      SlurmdSpoolDir=#{testpath}/spool
      SlurmdPidFile=#{testpath}/slurmd.pid
      NodeName=brewtest CPUs=1 Gres=gpu:1
      PartitionName=test Nodes=brewtest Default=YES
    EOS
    (testpath/"gres.conf").write "NodeName=brewtest Name=gpu File=/dev/null\n"
    output = shell_output("SLURM_CONF=#{testpath}/slurm.conf #{sbin}/slurmd -G -N brewtest 2>&1")
    assert_match "Name=gpu", output

    # The node tool reads the same slurm.conf: every plugin it names is in this keg.
    output = shell_output("#{bin}/slurm-mac doctor --prefix #{opt_prefix} --conf #{testpath}/slurm.conf --no-ask --json 2>&1", 1)
    assert_match(/"check":"plugins","detail":"[^"]*","status":"ok"/, output)
  end
end
"##;
