// Command library embeds two ejob jobs in a Go program: a SIMPLE job that
// prints its items every 2 seconds, and a one-off job run at start. Run
// several copies against one ZooKeeper (EJOB_ZK=127.0.0.1:2181) and they
// share the items; without EJOB_ZK it runs alone on the embedded registry.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/ejob-io/ejob"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	reg, err := ejob.EmbeddedRegistry("example")
	if zk := os.Getenv("EJOB_ZK"); zk != "" {
		reg, err = ejob.ZooKeeper(ctx, zk, "example")
	}
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	s, err := ejob.NewScheduler(reg)
	if err != nil {
		log.Fatal(err)
	}
	hello := ejob.NewJobConfig("hello", 3)
	hello.Cron, hello.ShardingItemParameters = "0/2 * * * * ?", "0=Beijing,1=Shanghai,2=Guangzhou"
	must(s.Simple(ctx, hello, func(ctx context.Context, sc ejob.ShardingContext) error {
		fmt.Printf("%s item %d (%s) on %s\n", sc.JobName, sc.ShardingItem, *sc.ShardingParameter, s.InstanceID())
		return nil
	}))
	must(s.Simple(ctx, ejob.NewJobConfig("once", 1), func(ctx context.Context, sc ejob.ShardingContext) error {
		fmt.Println("one-off job ran")
		return nil
	}))
	must(s.Start(ctx))
	must(s.Execute(ctx, "once"))
	<-ctx.Done()
	must(s.Shutdown(context.Background()))
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
