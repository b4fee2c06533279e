// Package ejob embeds ejob jobs in a Go program: SIMPLE jobs (a function
// per sharding item) and DATAFLOW jobs (fetch/process), scheduled by a
// Quartz cron or run one-off, sharded across every process that runs the
// same job in the same registry namespace — a real ZooKeeper ensemble or,
// for one process, the embedded registry. The built-in sharding
// strategies, error handlers and thread-pool sizes are served in-process.
//
// A minimal program:
//
//	reg, _ := ejob.EmbeddedRegistry("demo")
//	s, _ := ejob.NewScheduler(reg)
//	cfg := ejob.NewJobConfig("hello", 3)
//	cfg.Cron = "0/5 * * * * ?"
//	s.Simple(ctx, cfg, func(ctx context.Context, sc ejob.ShardingContext) error {
//		fmt.Println("item", sc.ShardingItem)
//		return nil
//	})
//	s.Start(ctx)
//	defer s.Shutdown(context.Background())
package ejob
