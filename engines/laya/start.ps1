# Starts laya-serve (laya[serve] 0.4.15) for System-1, from the venv beside this file.
# Binds 127.0.0.1 only (laya-serve reads LAYA_HOST/LAYA_PORT and ignores --host/--port), preloads
# typed-decisions, uses CUDA when an NVIDIA GPU answers, else the CPU, logs to laya-serve.log
# beside this file, and does nothing when the port is already in use.
param(
    [string]$Model = $(if ($env:LAYA_MODELS) { $env:LAYA_MODELS } else { "typed-decisions" }),
    [int]$Port = $(if ($env:LAYA_PORT) { [int]$env:LAYA_PORT } else { 8765 })
)
$ErrorActionPreference = "Stop"
$here = Split-Path -Parent $MyInvocation.MyCommand.Path
$log = Join-Path $here "laya-serve.log"

$client = New-Object System.Net.Sockets.TcpClient
try {
    $client.Connect("127.0.0.1", $Port)
    Write-Output "laya: port $Port on 127.0.0.1 is already in use; nothing to do"
    exit 0
} catch {
} finally {
    $client.Dispose()
}

$device = $env:LAYA_DEVICE
if (-not $device) {
    $device = "cpu"
    if (Get-Command nvidia-smi -ErrorAction SilentlyContinue) {
        & nvidia-smi -L *> $null
        if ($LASTEXITCODE -eq 0) { $device = "cuda" }
    }
}

$serve = Join-Path $here "venv\Scripts\laya-serve.exe"
if (-not (Test-Path $serve)) { $serve = "laya-serve" }
$env:LAYA_HOST = "127.0.0.1"
$env:LAYA_PORT = "$Port"
$env:LAYA_MODELS = $Model
$env:LAYA_DEVICE = $device
Add-Content -Path $log -Value "$(Get-Date -Format o) starting laya-serve on 127.0.0.1:$Port, models $Model, device $device"
# Start-Process cannot send stdout and stderr to one file; the errors go beside the log.
$p = Start-Process -FilePath $serve -WindowStyle Hidden -PassThru `
    -RedirectStandardOutput $log -RedirectStandardError (Join-Path $here "laya-serve.err.log")
Set-Content -Path (Join-Path $here "laya-serve.pid") -Value $p.Id
Write-Output "laya: started laya-serve on 127.0.0.1:$Port (pid $($p.Id), device $device); log: $log"
