// Runs before `npm pack` / `npm publish` in a workspace package's own folder and refuses: that
// package.json points its `floodgate-source` condition at sources, and `dist/` may be stale or
// absent. Pack the staged copy instead (its package.json has no scripts, so this never runs there).
const name = process.env.npm_package_name ?? 'this package';
console.error(`${name}: do not pack this folder directly. Run \`npm run pack:tarball -w ${name}\`,`);
console.error('which builds, stages a clean package.json and packs that (publish the tarball it prints).');
process.exitCode = 1;
