package machine

import "os/exec"

func runShell(script string) ([]byte, error) {
	return exec.Command("sh", "-c", script).Output()
}
