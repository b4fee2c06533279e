// Command ejob-jobtype-wordcount is an example third-party DATAFLOW job
// type plugin, written only against ejob's public sdk and spi packages.
//
// WORDCOUNT counts the words of item N's input file part-N.txt in the
// directory named by the wordcount.dir prop, a batch of lines per fetch,
// and appends each batch's counts to part-N.counts. Its progress lives in
// part-N.offset, so a relaunched plugin, a restarted host or another host
// that takes the item over carries on where the last committed batch
// ended. A job uses it with `elasticJobType: WORDCOUNT`.
package main

import (
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

func main() {
	sdk.Serve(sdk.Plugins{
		Version:  "1.0.0",
		JobTypes: map[string]spi.JobExecutor{"WORDCOUNT": NewWordCount(sdk.Logger())},
	})
}
