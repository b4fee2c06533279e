// Command notplugin is an ordinary program: it prints a greeting and exits.
package main

import "fmt"

func main() { fmt.Println("hello, I am not a plugin") }
