package cron_test

import (
	"fmt"
	"time"

	"github.com/ejob-io/ejob/core/cron"
)

func ExampleParseInLocation() {
	loc, err := cron.LoadZone("GMT+08:00")
	if err != nil {
		panic(err)
	}
	e, err := cron.ParseInLocation("0 30 9 ? * MON-FRI", loc)
	if err != nil {
		panic(err)
	}
	t := time.Date(2025, 1, 3, 12, 0, 0, 0, loc) // a Friday
	for range 3 {
		t = e.Next(t)
		fmt.Println(t.Format("Mon 2006-01-02 15:04 MST"))
	}
	// Output:
	// Mon 2025-01-06 09:30 GMT+08:00
	// Tue 2025-01-07 09:30 GMT+08:00
	// Wed 2025-01-08 09:30 GMT+08:00
}

func ExamplePreview() {
	from := time.Date(2025, 3, 8, 0, 0, 0, 0, time.UTC)
	times, err := cron.Preview("0 30 2 * * ?", "America/New_York", from, 3)
	if err != nil {
		panic(err)
	}
	for _, t := range times {
		fmt.Println(t.Format(time.RFC3339))
	}
	// Output:
	// 2025-03-08T02:30:00-05:00
	// 2025-03-10T02:30:00-04:00
	// 2025-03-11T02:30:00-04:00
}

func ExampleParse_error() {
	_, err := cron.Parse("0 0 25 * * ?")
	fmt.Println(err)
	// Output:
	// cron "0 0 25 * * ?": hour field: value 25 out of range 0-23
}

func ExampleParseSchedule() {
	loc, err := cron.LoadZone("Europe/Berlin")
	if err != nil {
		panic(err)
	}
	from := time.Date(2026, 1, 2, 12, 0, 0, 0, loc) // a Friday
	for _, expr := range []string{"0 30 9 ? * MON-FRI", "30 9 * * 1-5", "@every 90s"} {
		s, err := cron.ParseSchedule(expr, loc)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-20s %-10s %s\n", expr, s.Kind(), s.Next(from).Format("Mon 15:04:05"))
	}
	_, err = cron.ParseSchedule("* * * * * *", loc)
	fmt.Println(err)
	// Output:
	// 0 30 9 ? * MON-FRI   Quartz     Mon 09:30:00
	// 30 9 * * 1-5         crontab    Mon 09:30:00
	// @every 90s           descriptor Fri 12:01:30
	// cron "* * * * * *": read as Quartz (6 fields): specifying both a day-of-month and a day-of-week is not supported; use '?' in one of them
}
