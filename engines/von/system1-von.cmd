@echo off
rem Written by `system1 engine autostart on von`: starts the von engine at login.
powershell -NoProfile -WindowStyle Hidden -ExecutionPolicy Bypass -File "@LAUNCHER_PS1@"
