package preview

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteText writes the plan for people: each group's heading and its lines, one per change
// with its sign first, the configuration's changes, the brake's verdict and the summary.
func WriteText(w io.Writer, p *Plan) error {
	var b strings.Builder
	if len(p.Config) > 0 {
		b.WriteString("RouterHostsConfig spec:\n")
		for _, c := range p.Config {
			fmt.Fprintf(&b, "  ~ %s: %s → %s\n", c.Field, c.Old, c.New)
		}
		b.WriteString("\n")
	}
	for i := range p.Groups {
		g := &p.Groups[i]
		b.WriteString(g.Title() + "\n")
		if len(g.Lines) == 0 {
			b.WriteString("  (no change on the router)\n")
		}
		for j := range g.Lines {
			fmt.Fprintf(&b, "  %s %s\n", g.Lines[j].Sign, g.Lines[j].String())
		}
		b.WriteString("\n")
	}
	if p.Brake != nil {
		fmt.Fprintf(&b, "brake: %d deletions would be held: %s\n\n", p.Brake.Held, p.Brake.Message)
	}
	for _, u := range p.Unread {
		fmt.Fprintf(&b, "not read: %s (%s): no source of this configuration reads its kind\n", u.Object.String(), u.Origin)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	b.WriteString(p.Summary.Line() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the plan as its versioned JSON shape.
func WriteJSON(w io.Writer, p *Plan) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// WriteMarkdown writes the plan as a pull-request comment: the summary first, then a diff
// block per object, which GitHub colours by the signs.
func WriteMarkdown(w io.Writer, p *Plan) error {
	var b strings.Builder
	b.WriteString("### router-hosts plan\n\n")
	fmt.Fprintf(&b, "**%s**\n\n", p.Summary.Line())
	if p.Brake != nil {
		fmt.Fprintf(&b, "> [!WARNING]\n> The brake would hold %d deletions: %s\n\n", p.Brake.Held, p.Brake.Message)
	}
	if len(p.Config) > 0 {
		b.WriteString("#### RouterHostsConfig spec\n\n```diff\n")
		for _, c := range p.Config {
			fmt.Fprintf(&b, "- %s: %s\n+ %s: %s\n", c.Field, c.Old, c.Field, c.New)
		}
		b.WriteString("```\n\n")
	}
	for i := range p.Groups {
		g := &p.Groups[i]
		fmt.Fprintf(&b, "#### %s\n\n", mdEscape(g.Title()))
		if len(g.Lines) == 0 {
			b.WriteString("No change on the router.\n\n")
			continue
		}
		b.WriteString("```diff\n")
		for j := range g.Lines {
			fmt.Fprintf(&b, "%s %s\n", g.Lines[j].Sign, g.Lines[j].String())
		}
		b.WriteString("```\n\n")
	}
	if len(p.Unread) > 0 {
		b.WriteString("<details><summary>Objects of kinds the operator does not read</summary>\n\n")
		for _, u := range p.Unread {
			fmt.Fprintf(&b, "- %s (%s)\n", mdEscape(u.Object.String()), mdEscape(u.Origin))
		}
		b.WriteString("\n</details>\n\n")
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "> %s\n", mdEscape(n))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdEscape keeps a name from being read as markdown.
func mdEscape(s string) string {
	r := strings.NewReplacer("*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", ">", "&gt;", "#", `\#`)
	return r.Replace(s)
}
