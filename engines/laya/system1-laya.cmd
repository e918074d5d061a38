@echo off
rem Written by `system1 engine autostart on laya`: starts the laya engine at login.
powershell -NoProfile -WindowStyle Hidden -ExecutionPolicy Bypass -File "@LAUNCHER_PS1@"
