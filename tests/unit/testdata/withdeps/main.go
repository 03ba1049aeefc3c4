// A program with one dependency replaced by a local directory: gives the buildinfo tests a
// binary whose module list has a "dep" line followed by a "=>" replacement line.
package main

import (
	"fmt"

	"example.com/gospan/testdata/greet"
)

func main() {
	fmt.Println(greet.Hello("gospan"))
}
