// Runs before `npm pack` / `npm publish` in the workspace's package folder and refuses: that
// package.json points its `floodgate-source` condition at sources the tarball does not ship.
// Pack the staged copy instead; the staged package.json has no scripts, so this never runs there.
console.error('floodgate: do not pack this folder directly. Run `npm run pack:tarball -w floodgate`,');
console.error('which builds, stages a clean package.json and packs that (publish the tarball it prints).');
process.exitCode = 1;
