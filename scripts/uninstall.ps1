# Uninstalls system1 for this user by running `system1 uninstall`: removes the Claude Code
# registration, the binary and any engine start-at-login entry (system1-<engine>.cmd in the
# Startup folder). -Purge also deletes the config, the engines and the logs; stop a running engine
# first, because Windows cannot delete a running program.
#
#   powershell -ExecutionPolicy Bypass -File .\scripts\uninstall.ps1 [-Purge]
param([switch]$Purge)
$ErrorActionPreference = 'Stop'

$dir = if ($env:SYSTEM1_INSTALL_DIR) { $env:SYSTEM1_INSTALL_DIR } else { Join-Path $env:USERPROFILE '.system1-gateway' }
$bin = Join-Path $dir 'bin\system1.exe'
$uninstallArgs = @('uninstall')
if ($Purge) { $uninstallArgs += '--purge' }

if (Test-Path $bin) {
    # Windows cannot delete a running program: run a temporary copy, which deletes the original.
    $copy = Join-Path ([IO.Path]::GetTempPath()) ("system1-uninstall-" + [guid]::NewGuid().ToString('N') + '.exe')
    Copy-Item -Path $bin -Destination $copy
    try {
        & $copy @uninstallArgs
        $code = $LASTEXITCODE
    } finally {
        Remove-Item -Force -Path $copy -ErrorAction SilentlyContinue
    }
    exit $code
}

# No binary left (a half-removed install): do what can be done without it.
Write-Warning "no system1 binary at $bin; removing what is left"
if (Get-Command claude -ErrorAction SilentlyContinue) {
    # Windows PowerShell turns a native command's stderr into an error under 'Stop'.
    $ErrorActionPreference = 'Continue'
    & claude mcp remove --scope user system1 2>$null | Out-Null
    $ErrorActionPreference = 'Stop'
    if ($LASTEXITCODE -eq 0) { Write-Host "claude: removed the system1 registration" }
}
$startup = Join-Path $env:APPDATA 'Microsoft\Windows\Start Menu\Programs\Startup'
Get-ChildItem -Path $startup -Filter 'system1-*.cmd' -ErrorAction SilentlyContinue | ForEach-Object {
    Remove-Item -Force $_.FullName; Write-Host "removed start-at-login entry $($_.FullName)"
}
if ($Purge) {
    $config = if ($env:SYSTEM1_CONFIG) { $env:SYSTEM1_CONFIG } else { Join-Path $env:APPDATA 'system1\config.toml' }
    if (Test-Path $dir) { Remove-Item -Recurse -Force -Path $dir; Write-Host "removed $dir" }
    if (Test-Path $config) { Remove-Item -Force -Path $config; Write-Host "removed $config" }
}
exit 0
