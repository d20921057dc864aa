package memory

// SkillReview is what a review of a desk's skills (skills/) reports: the
// curator returns it, the keeper announces it (skills.reviewed).
type SkillReview struct {
	// Skills names the skills it looked at.
	Skills []string
	// Changes describes each change it made, one line each.
	Changes []string
}
