package history

import "github.com/mosk-qa/asap2-e2e/e2e/results"

func init() {
	families.Excuse("its profiles are Profiles (every profile's points); a search's rate has no series", results.FamilyPPS)
}
