import baseConfig, { pureLibraryRules } from '../../eslint.config.mjs';

export default [...baseConfig, pureLibraryRules];
