package coord_test

import "testing"

// scenarios are the kernel scenarios run both on the embedded registry
// (TestScenarios) and on a real ZooKeeper (TestZooKeeper).
func scenarios() map[string]func(*testing.T, *cluster) {
	return map[string]func(*testing.T, *cluster){
		"AvgTwoInstancesFourItems":               scenarioAvgTwoInstancesFourItems,
		"AvgThreeInstancesTenItems":              scenarioAvgThreeInstancesTenItems,
		"JoiningInstanceGetsItemsBeforeNextRun":  scenarioJoiningInstanceGetsItemsBeforeNextRun,
		"LeavingInstanceItemsResharded":          scenarioLeavingInstanceItemsResharded,
		"ShardingTotalCountChangeReshards":       scenarioShardingTotalCountChangeReshards,
		"DisabledServerGetsNoItemsAndCannotLead": scenarioDisabledServerGetsNoItemsAndCannotLead,
		"StartDisabledAbdicates":                 scenarioStartDisabledAbdicates,
		"DisabledItemSkipped":                    scenarioDisabledItemSkipped,
		"StaticShardingKeepsAssignments":         scenarioStaticShardingKeepsAssignments,
		"ReconcileFlagsOfflineAssignments":       scenarioReconcileFlagsOfflineAssignments,
		"TriggerRunsOnceOnEveryInstance":         scenarioTriggerRunsOnceOnEveryInstance,
		"Misfire":                                scenarioMisfire,
		"ConfigChangeReactions":                  scenarioConfigChangeReactions,
		"MissedFireRunsRightAfterTheRun":         scenarioMissedFireRunsRightAfterTheRun,
		"DeadOwnersMissedFireFailsOver":          scenarioDeadOwnersMissedFireFailsOver,
		"OwnItemRunningElsewhereCaughtUp":        scenarioOwnItemRunningElsewhereCaughtUp,
		"PendingMisfireRunAtOnceAndHandedOver":   scenarioPendingMisfireRunAtOnceAndHandedOver,
		"MissedFireDuringReshardingFlagsGained":  scenarioMissedFireDuringReshardingFlagsGainedItems,
		"ClaimWhileWaitingForReshardingRuns":     scenarioClaimWhileWaitingForReshardingRuns,
	}
}

func TestScenarios(t *testing.T) {
	for name, run := range scenarios() {
		t.Run(name, func(t *testing.T) { run(t, newEmbeddedCluster(t)) })
	}
}
