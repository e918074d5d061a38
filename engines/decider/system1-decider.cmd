@echo off
rem Written by `system1 engine autostart on decider`: starts the decision server at login.
powershell -NoProfile -WindowStyle Hidden -ExecutionPolicy Bypass -File "@LAUNCHER_PS1@"
