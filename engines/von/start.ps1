# Starts `von serve` (von-sdk 1.3.7) for System-1, from the venv beside this file: bound to
# 127.0.0.1, port 8777 (or -Port / VON_PORT), logging to von-serve.log beside this file, and doing
# nothing when the port is already in use.
param(
    [int]$Port = $(if ($env:VON_PORT) { [int]$env:VON_PORT } else { 8777 })
)
$ErrorActionPreference = "Stop"
$here = Split-Path -Parent $MyInvocation.MyCommand.Path
$log = Join-Path $here "von-serve.log"

$client = New-Object System.Net.Sockets.TcpClient
try {
    $client.Connect("127.0.0.1", $Port)
    Write-Output "von: port $Port on 127.0.0.1 is already in use; nothing to do"
    exit 0
} catch {
} finally {
    $client.Dispose()
}

$von = Join-Path $here "venv\Scripts\von.exe"
if (-not (Test-Path $von)) { $von = "von" }
Add-Content -Path $log -Value "$(Get-Date -Format o) starting von serve on 127.0.0.1:$Port"
$p = Start-Process -FilePath $von -ArgumentList @("serve", "--host", "127.0.0.1", "--port", "$Port") `
    -WindowStyle Hidden -PassThru -RedirectStandardOutput $log -RedirectStandardError (Join-Path $here "von-serve.err.log")
Set-Content -Path (Join-Path $here "von-serve.pid") -Value $p.Id
Write-Output "von: started von serve on 127.0.0.1:$Port (pid $($p.Id)); log: $log"
