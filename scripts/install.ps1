# Installs system1 for this user, then runs `system1 install`, which copies the binary into
# %USERPROFILE%\.system1-gateway\bin (SYSTEM1_INSTALL_DIR overrides), writes the config when there
# is none and registers the MCP server with Claude Code (or prints the command).
#
# Last, `system1 smoke` checks the installed server: a server that does not work fails the install;
# an engine that is not running is only a warning (an upgrade with the engine stopped succeeds).
#
# With cargo on PATH it builds this checkout (`cargo build --release --locked`) into
# <install dir>\build, not into the checkout: Claude Code copies a plugin installed from a local
# folder whole, so a target\ in the clone would land in its plugin cache. CARGO_TARGET_DIR
# overrides where the build goes. -BuildOnly (install.sh's --build-only, README's "Try it") stops
# after the build and copies the binary to <build dir>\system1.exe; a later run builds the same way
# into the same place, so cargo finds it up to date and the first hour has one build, not two.
# Without cargo, it
# downloads the release binary for Windows x86_64, pinned to the plugin's version, and checks its
# SHA-256 against the release's SHA256SUMS before running anything: a mismatch installs nothing.
#
#   powershell -ExecutionPolicy Bypass -File .\scripts\install.ps1 [-BuildOnly | -NoRegister]
#
#   SYSTEM1_INSTALL_METHOD    build | download (default: build when cargo is on PATH)
#   SYSTEM1_RELEASE_BASE_URL  where releases live (default: the GitHub releases of this repository)
param([switch]$BuildOnly, [switch]$NoRegister)
$ErrorActionPreference = 'Stop'

function Fail([string]$message) {
    [Console]::Error.WriteLine("install.ps1: $message")
    exit 1
}

$root = Split-Path -Parent $PSScriptRoot

# Installs with the given binary, then checks the installed server the way an MCP client starts it.
# Native output goes to the host (Out-Host), so that the function returns only its exit code.
function Install-AndCheck([string]$exe) {
    & $exe @installArgs | Out-Host
    if ($LASTEXITCODE -ne 0) { return $LASTEXITCODE }
    $dir = if ($env:SYSTEM1_INSTALL_DIR) { $env:SYSTEM1_INSTALL_DIR } else { Join-Path $HOME '.system1-gateway' }
    $installed = Join-Path $dir 'bin\system1.exe'
    Write-Host "checking the installed server (system1 smoke)"
    & $installed smoke | Out-Host
    if ($LASTEXITCODE -eq 5) {
        [Console]::Error.WriteLine("install.ps1: warning: system1 is installed and its server works, but no engine answers yet; start it as the fix above says ('$installed doctor' checks everything)")
        return 0
    }
    if ($LASTEXITCODE -ne 0) {
        [Console]::Error.WriteLine("install.ps1: system1 is installed, but its server check failed: run '$installed doctor' for the cause and the fix")
        return 1
    }
    return 0
}
$installArgs = @('install')
if ($NoRegister) { $installArgs += '--no-register' }

$method = $env:SYSTEM1_INSTALL_METHOD
if (-not $method) {
    if (Get-Command cargo -ErrorAction SilentlyContinue) { $method = 'build' } else { $method = 'download' }
}

if ($method -eq 'build') {
    if (-not $env:CARGO_TARGET_DIR) {
        $installDir = if ($env:SYSTEM1_INSTALL_DIR) { $env:SYSTEM1_INSTALL_DIR } else { Join-Path $HOME '.system1-gateway' }
        $env:CARGO_TARGET_DIR = Join-Path $installDir 'build'
    }
    Write-Host "building system1 from $root into $($env:CARGO_TARGET_DIR) (cargo build --release --locked)"
    Push-Location $root
    try {
        & cargo build --release --locked
        if ($LASTEXITCODE -ne 0) { Fail "cargo build failed" }
    } finally { Pop-Location }
    $targetDir = if ($env:CARGO_TARGET_DIR) { $env:CARGO_TARGET_DIR } else { 'target' }
    if (-not [IO.Path]::IsPathRooted($targetDir)) { $targetDir = Join-Path $root $targetDir }
    $built = Join-Path $targetDir 'release\system1.exe'
    if ($BuildOnly) {
        # A copy, not a link: a symbolic link needs administrator rights or developer mode on Windows.
        $copy = Join-Path $targetDir 'system1.exe'
        Copy-Item -Force -Path $built -Destination $copy
        Write-Host "built $copy (a copy of $built); '.\scripts\install.ps1' installs this build without building again"
        exit 0
    }
    exit (Install-AndCheck $built)
}
if ($method -ne 'download') { Fail "SYSTEM1_INSTALL_METHOD must be build or download, not '$method'" }
if ($BuildOnly) { Fail "-BuildOnly builds with cargo, which is not on PATH (https://rustup.rs); without it, '.\scripts\install.ps1' installs the release binary" }

# The plugin's version pins the release; Cargo.toml carries the same number.
$version = $null
$manifest = Join-Path $root '.claude-plugin\plugin.json'
if (Test-Path $manifest) { $version = (Get-Content $manifest -Raw | ConvertFrom-Json).version }
if (-not $version) {
    $line = Select-String -Path (Join-Path $root 'Cargo.toml') -Pattern '^version\s*=\s*"([^"]+)"' | Select-Object -First 1
    if ($line) { $version = $line.Matches[0].Groups[1].Value }
}
if (-not $version) { Fail "cannot read the version from .claude-plugin\plugin.json or Cargo.toml" }

# Windows on ARM runs the x86_64 build under emulation.
if ($env:PROCESSOR_ARCHITECTURE -notin @('AMD64', 'ARM64')) {
    Fail "no prebuilt binary for $($env:PROCESSOR_ARCHITECTURE); install Rust (https://rustup.rs) and re-run to build it"
}
$asset = "system1-$version-x86_64-pc-windows-msvc.exe"
$base = if ($env:SYSTEM1_RELEASE_BASE_URL) { $env:SYSTEM1_RELEASE_BASE_URL } else { 'https://github.com/system1-gateway/system1/releases/download' }
$url = "$base/system1--v$version"

$tmp = Join-Path ([IO.Path]::GetTempPath()) ("system1-" + [guid]::NewGuid().ToString('N'))
New-Item -ItemType Directory -Path $tmp | Out-Null
$code = 1
try {
    # Windows PowerShell 5.1 may default to TLS 1.0, which GitHub refuses.
    [Net.ServicePointManager]::SecurityProtocol = [Net.ServicePointManager]::SecurityProtocol -bor [Net.SecurityProtocolType]::Tls12
    Write-Host "downloading $asset from $url"
    Invoke-WebRequest -UseBasicParsing -Uri "$url/SHA256SUMS" -OutFile (Join-Path $tmp 'SHA256SUMS')
    $exe = Join-Path $tmp 'system1.exe'
    Invoke-WebRequest -UseBasicParsing -Uri "$url/$asset" -OutFile $exe

    $expected = Get-Content (Join-Path $tmp 'SHA256SUMS') | ForEach-Object {
        $parts = $_.Trim() -split '\s+'
        if ($parts.Count -ge 2 -and ($parts[1] -eq $asset -or $parts[1] -eq "*$asset")) { $parts[0].ToLowerInvariant() }
    } | Select-Object -First 1
    if (-not $expected) { Fail "SHA256SUMS of release system1--v$version lists no $asset; nothing was installed" }
    $actual = (Get-FileHash -Algorithm SHA256 -Path $exe).Hash.ToLowerInvariant()
    if ($actual -ne $expected) {
        Fail "checksum mismatch for ${asset}: SHA256SUMS says $expected, the download is $actual; nothing was installed"
    }
    Write-Host "verified SHA-256 $actual"
    $code = Install-AndCheck $exe
} finally {
    Remove-Item -Recurse -Force -Path $tmp -ErrorAction SilentlyContinue
}
exit $code
