package coord_test

import (
	"testing"
	"time"
)

// at is 2030-01-01T00:MM:SSZ, a time of the scenarios' manual clocks.
func at(minute, second int) time.Time { return time.Date(2030, 1, 1, 0, minute, second, 0, time.UTC) }

// scenarios are the kernel scenarios run both on the embedded registry
// (TestScenarios) and on a real ZooKeeper (TestZooKeeper).
func scenarios() map[string]func(*testing.T, *cluster) {
	return map[string]func(*testing.T, *cluster){
		"AvgTwoInstancesFourItems":               scenarioAvgTwoInstancesFourItems,
		"AvgThreeInstancesTenItems":              scenarioAvgThreeInstancesTenItems,
		"JoiningInstanceGetsItemsBeforeNextRun":  scenarioJoiningInstanceGetsItemsBeforeNextRun,
		"LeavingInstanceItemsResharded":          scenarioLeavingInstanceItemsResharded,
		"ShardingTotalCountChangeReshards":       scenarioShardingTotalCountChangeReshards,
		"CatchUpOfAnItemGoneWithTheCount":        scenarioCatchUpOfAnItemGoneWithTheCount,
		"DisabledServerGetsNoItemsAndCannotLead": scenarioDisabledServerGetsNoItemsAndCannotLead,
		"StartDisabledAbdicates":                 scenarioStartDisabledAbdicates,
		"DisabledItemSkipped":                    scenarioDisabledItemSkipped,
		"StaticShardingKeepsAssignments":         scenarioStaticShardingKeepsAssignments,
		"ReconcileFlagsOfflineAssignments":       scenarioReconcileFlagsOfflineAssignments,
		"TriggerRunsOnceOnEveryInstance":         scenarioTriggerRunsOnceOnEveryInstance,
		"Misfire":                                scenarioMisfire,
		"ConfigChangeReactions":                  scenarioConfigChangeReactions,
		"MissedFireRunsRightAfterTheRun":         missedFireScenario("* * * * * ?", at(0, 1), at(0, 2)),
		"MissedFireRunsRightAfterTheRunCrontab":  missedFireScenario("* * * * *", at(1, 0), at(2, 0)),
		"MissedFireRunsRightAfterTheRunEvery":    missedFireScenario("@every 1s", at(0, 1), at(0, 2)),
		"DeadOwnersMissedFireFailsOver":          scenarioDeadOwnersMissedFireFailsOver,
		"OwnItemRunningElsewhereCaughtUp":        scenarioOwnItemRunningElsewhereCaughtUp,
		"PendingMisfireRunAtOnceAndHandedOver":   scenarioPendingMisfireRunAtOnceAndHandedOver,
		"MissedFireDuringReshardingFlagsGained":  scenarioMissedFireDuringReshardingFlagsGainedItems,
		"ClaimWhileWaitingForReshardingRuns":     scenarioClaimWhileWaitingForReshardingRuns,
		"BusyClaimRunsAfterReshardingWait":       scenarioBusyClaimRunsAfterReshardingWait,
		"RestartRegisters":                       scenarioRestartRegisters,
		"RestartDisabledAbdicates":               scenarioRestartDisabledAbdicates,
		"ScheduleFireTakenByClaimKeepsOwnItems":  scenarioScheduleFireTakenByClaimKeepsOwnItems,
		"CrashDuringFailoverItemClaimedOnce":     scenarioCrashDuringFailoverItemClaimedOnce,
		"MisfireOfClaimedItemQueuedOnce":         scenarioMisfireOfClaimedItemQueuedOnce,
		"ClaimedItemRunsBeforeCatchUp":           scenarioClaimedItemRunsBeforeCatchUp,
		"OwnCatchUpJoinsFailoverChain":           scenarioOwnCatchUpJoinsFailoverChain,
		"JoinedCatchUpKeepsFlagsWhenNoBegin":     scenarioJoinedCatchUpKeepsFlagsWhenItDoesNotBegin,
		"JoinedItemRunningElsewhereCatchesUp":    scenarioJoinedItemRunningElsewhereCatchesUp,
		"FailoverRunThroughFireGainsItem":        scenarioFailoverRunThroughFireGainsItem,
	}
}

func TestScenarios(t *testing.T) {
	for name, run := range scenarios() {
		t.Run(name, func(t *testing.T) { run(t, newEmbeddedCluster(t)) })
	}
}
