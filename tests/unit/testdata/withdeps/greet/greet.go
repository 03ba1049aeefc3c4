// Package greet is the local dependency of the withdeps test program.
package greet

// Hello returns a greeting for name.
func Hello(name string) string {
	return "hello, " + name
}
