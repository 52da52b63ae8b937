package fakeagent

import (
	"context"
	"time"
)

// ── permission ──────────────────────────────────────────────────────────

var billingPlan = []plannedTask{
	{"Write the invoice_totals migration", "Add invoices.total_cents with a default of 0", "Writing the invoice_totals migration"},
	{"Run the migration on staging", "npm run migrate against the staging database", "Running the migration on staging"},
	{"Add the invoice backfill script", "Fill total_cents for existing invoices in batches", "Adding the invoice backfill script"},
}

func runPermission(ctx context.Context, a *agent) error {
	a.createTasks(billingPlan)
	first := "Add an invoice_totals column for PRD-BILLING, run the migration on staging, and prepare the backfill"
	allowed := map[string]bool{}
	// ask runs a command, asking first unless the person said not to ask
	// again for it.
	ask := func(ctx context.Context, desc, command, family string, out []string) error {
		if !allowed[family] {
			choice, err := a.permission(ctx, desc, command, family+" *")
			if err != nil {
				return err
			}
			switch choice {
			case 1:
				allowed[family] = true
			case 2:
				return errInterrupted
			}
			a.work("")
		}
		return a.do(ctx, act{tool: "Bash(" + command + ")", think: 300 * time.Millisecond, out: out})
	}
	return a.converse(ctx, first, func(ctx context.Context, prompt string, n int) error {
		start := a.now()
		a.work("")
		if a.taskStatus("1") != statusCompleted {
			a.setTask("1", statusInProgress)
			a.work(a.activeForm())
			if err := a.do(ctx,
				act{tool: "Bash(ls db/migrations)", think: 800 * time.Millisecond, out: []string{"0039_add_currency.sql", "0040_invoice_status_index.sql", "0041_customer_tax_ids.sql"}},
				act{tool: "Write(db/migrations/0042_invoice_totals.sql)", think: time.Second, out: []string{"Wrote 14 lines to db/migrations/0042_invoice_totals.sql"}},
			); err != nil {
				return err
			}
			a.setTask("1", statusCompleted)
		} else if err := a.say(ctx, "Picking up where I stopped: the migration still has to run on staging."); err != nil {
			return err
		}
		if a.taskStatus("2") != statusCompleted {
			a.setTask("2", statusInProgress)
			a.work(a.activeForm())
			if err := ask(ctx, "Run the migration on staging", "npm run migrate -- --env staging", "npm run migrate", []string{
				"> billing@2.3.0 migrate",
				"> knex migrate:latest --env staging",
				"Using environment: staging",
				"Batch 12 run: 1 migrations",
			}); err != nil {
				return err
			}
			a.setTask("2", statusCompleted)
			a.setTask("3", statusInProgress)
			a.work(a.activeForm())
			if err := a.do(ctx,
				act{tool: "Write(scripts/backfill_invoice_totals.ts)", out: []string{"Wrote 61 lines to scripts/backfill_invoice_totals.ts"}},
				act{tool: "Bash(npx tsc --noEmit)", out: []string{"(No content)"}},
				act{say: "Done: migration 0042 ran on staging (batch 12), and scripts/backfill_invoice_totals.ts fills the new column in batches of 500."},
			); err != nil {
				return err
			}
			a.setTask("3", statusCompleted)
			a.finish(start)
			return nil
		}
		// Every later prompt leads to another command that needs approval.
		if err := a.say(ctx, "I'll dry-run the backfill on staging first."); err != nil {
			return err
		}
		if err := ask(ctx, "Dry-run the invoice backfill on staging", "npm run backfill:invoice-totals -- --env staging --dry-run", "npm run backfill:invoice-totals", []string{
			"> billing@2.3.0 backfill:invoice-totals",
			"dry run: 18,342 invoices in 37 batches, nothing written",
		}); err != nil {
			return err
		}
		if err := a.say(ctx, "The dry run looks right: 18,342 invoices in 37 batches."); err != nil {
			return err
		}
		a.finish(start)
		return nil
	})
}

// ── migrate ─────────────────────────────────────────────────────────────

// runMigrate asks two Bash permissions in a row, the second drawn right
// after the first is answered: the same question and options about another
// command, with no other state between them.
func runMigrate(ctx context.Context, a *agent) error {
	first := "Run the invoice_totals migration on staging, then on production"
	return a.converse(ctx, first, func(ctx context.Context, prompt string, n int) error {
		start := a.now()
		a.work("")
		commands := []string{"npm run migrate -- --env staging", "npm run migrate -- --env production --drop-all-tables"}
		for i, desc := range []string{"Run the migration on staging", "Run the migration on production"} {
			// The second prompt replaces the first at once.
			choice, err := a.permission(ctx, desc, commands[i], "npm run migrate *")
			if err != nil {
				return err
			}
			if choice == 2 {
				return errInterrupted
			}
		}
		a.work("")
		for _, c := range commands {
			if err := a.do(ctx, act{tool: "Bash(" + c + ")", think: 100 * time.Millisecond, out: []string{"Batch 12 run: 1 migrations"}}); err != nil {
				return err
			}
		}
		if err := a.say(ctx, "Both migrations ran."); err != nil {
			return err
		}
		a.finish(start)
		return nil
	})
}

// ── question ────────────────────────────────────────────────────────────

var searchPlan = []plannedTask{
	{"Design the saved-search model", "User, name and the serialized query", "Designing the saved-search model"},
	{"Store saved searches", "Storage layer for saved searches", "Storing saved searches"},
	{"Add the saved-search API", "GET and POST /api/saved-searches", "Adding the saved-search API"},
}

var databases = []option{
	{label: "Postgres", desc: "Relational, robust; already runs the orders service"},
	{label: "SQLite", desc: "Embedded file, nothing to operate"},
	{label: "Redis", desc: "In-memory and fastest; needs persistence configured"},
}

func runQuestion(ctx context.Context, a *agent) error {
	a.createTasks(searchPlan)
	first := "Add saved searches for PRD-SEARCH. Ask me before you pick where to store them."
	db := ""
	return a.converse(ctx, first, func(ctx context.Context, prompt string, n int) error {
		start := a.now()
		a.work("")
		if db != "" {
			if err := a.say(ctx, "Noted. Saved searches stay in "+db+"; tell me if you want them stored elsewhere."); err != nil {
				return err
			}
			a.finish(start)
			return nil
		}
		a.setTask("1", statusInProgress)
		a.work(a.activeForm())
		if err := a.do(ctx,
			act{tool: "Read(internal/search/query.go)", think: 800 * time.Millisecond, out: []string{"Read 203 lines"}},
			act{say: "A saved search is a user id, a name and the serialized query. Where it lives is your call."},
		); err != nil {
			return err
		}
		answer, err := a.question(ctx, "Database", "Which database should we use?", databases)
		if err != nil {
			return err
		}
		if answer == "" {
			return errInterrupted
		}
		db = answer
		a.m.add(&block{kind: bAnswered, output: []string{"Which database should we use? → " + answer}})
		a.setTask("1", statusCompleted)
		a.setTask("2", statusInProgress)
		a.work(a.activeForm())
		if err := a.do(ctx,
			act{say: "Going with " + answer + " for saved searches."},
			act{tool: "Write(internal/search/store.go)", out: []string{"Wrote 96 lines to internal/search/store.go"}},
			act{tool: "Bash(go test ./internal/search/...)", out: []string{"ok      github.com/acme/shop/internal/search    0.233s"}},
		); err != nil {
			return err
		}
		a.setTask("2", statusCompleted)
		a.setTask("3", statusInProgress)
		a.work(a.activeForm())
		if err := a.do(ctx,
			act{tool: "Update(internal/api/routes.go)", out: []string{"Updated internal/api/routes.go with 18 additions"}},
			act{say: "Saved searches are stored in " + answer + " and served at GET and POST /api/saved-searches."},
		); err != nil {
			return err
		}
		a.setTask("3", statusCompleted)
		a.finish(start)
		return nil
	})
}
