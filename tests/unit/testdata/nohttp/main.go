// A Go program without net/http: gospan must refuse it with a clear message.
package main

import "fmt"

func main() {
	fmt.Println("no http here")
}
