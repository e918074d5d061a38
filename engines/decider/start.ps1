# Starts the decision server (llama.cpp's server from the PyPI wheel xllamacpp, on the decision GGUF
# `system1 engine install decider` downloaded) for System-1, from the venv beside this file: bound to
# 127.0.0.1, port 8788 (or -Port / DECIDER_PORT), logging to llama-server.log beside this file, and
# doing nothing when the port is already in use.
param(
    [int]$Port = $(if ($env:DECIDER_PORT) { [int]$env:DECIDER_PORT } else { 8788 })
)
$ErrorActionPreference = "Stop"
$here = Split-Path -Parent $MyInvocation.MyCommand.Path
$log = Join-Path $here "llama-server.log"

$client = New-Object System.Net.Sockets.TcpClient
try {
    $client.Connect("127.0.0.1", $Port)
    Write-Output "decider: port $Port on 127.0.0.1 is already in use; nothing to do"
    exit 0
} catch {
} finally {
    $client.Dispose()
}

$python = Join-Path $here "venv\Scripts\python.exe"
if (-not (Test-Path $python)) { throw "decider: $python is missing; run ``system1 engine install decider``" }
$env:DECIDER_PORT = "$Port"
Add-Content -Path $log -Value "$(Get-Date -Format o) starting the decision server on 127.0.0.1:$Port"
$p = Start-Process -FilePath $python -ArgumentList @((Join-Path $here "serve.py")) `
    -WindowStyle Hidden -PassThru -RedirectStandardOutput $log -RedirectStandardError (Join-Path $here "llama-server.err.log")
Set-Content -Path (Join-Path $here "llama-server.pid") -Value $p.Id
Write-Output "decider: started the decision server on 127.0.0.1:$Port (pid $($p.Id)); log: $log"
