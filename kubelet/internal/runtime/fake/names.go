package fake

import "strings"

// signalNumber maps a stop signal to its number, for the 128+n exit code of a killed process.
func signalNumber(sig string) int {
	switch strings.TrimPrefix(strings.ToUpper(sig), "SIG") {
	case "HUP", "1":
		return 1
	case "INT", "2":
		return 2
	case "QUIT", "3":
		return 3
	case "KILL", "9":
		return 9
	case "USR1", "10":
		return 10
	case "USR2", "12":
		return 12
	default:
		return 15
	}
}

// normalize makes "busybox" and "busybox:latest" the same image, as Docker does.
func normalize(image string) string {
	if strings.Contains(image, "@") {
		return image
	}
	if i := strings.LastIndex(image, ":"); i < 0 || strings.Contains(image[i:], "/") {
		return image + ":latest"
	}
	return image
}
