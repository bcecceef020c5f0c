// Recurses without end: QuickJS's stack limit turns it into an `error` (stack overflow); the next run works.
function down(n) {
  return down(n + 1) + 1
}
down(0)
