/**
 * The word pools generated articles are made of: topics with their actors, projects, quoted roles
 * and tone-specific sentences, plus titles, leads, quotes and closings per tone.
 */

export type Tone = 'positive' | 'negative' | 'neutral';

/** The words an article is made of, chosen once per article so templates only concatenate. */
export interface Slots {
  readonly actor: string;
  readonly Actor: string;
  readonly project: string;
  readonly Project: string;
  readonly place: string;
  readonly person: string;
  readonly role: string;
  readonly day: string;
  readonly when: string;
  /** A small count of years, 2–10. */
  readonly years: number;
  /** A percentage, 3–40. */
  readonly percent: number;
}

export type Template = (s: Slots) => string;

export interface Topic {
  readonly name: string;
  /** Who acts or is blamed; lower case unless a proper noun (templates capitalise via `Actor`). */
  readonly actors: readonly string[];
  /** What the story is about, with its article ("the …") so it reads in any template. */
  readonly projects: readonly string[];
  /** Who is quoted, after "said <person>, ". */
  readonly roles: readonly string[];
  readonly sentences: Readonly<Record<Tone, readonly Template[]>>;
}

export const TOPICS: readonly Topic[] = [
  {
    name: 'economy',
    actors: ['the central bank', 'the finance ministry', 'regional manufacturers', 'Harbor Bank', 'the chamber of commerce'],
    projects: [
      'the new trade agreement',
      'the tax relief package',
      'the export programme',
      'the port expansion plan',
      'the small business loan scheme',
    ],
    roles: ['chief economist at Harbor Bank', 'a spokesperson for the finance ministry', 'who runs a hardware store in the town centre'],
    sentences: {
      positive: [
        (s) => `Unemployment fell to its lowest level in ${s.years} years, according to official figures.`,
        (s) => `Exports from ${s.place} rose ${s.percent} percent, beating every forecast.`,
        () => `Local businesses reported strong growth in orders and plans to hire more staff.`,
      ],
      negative: [
        (s) => `Factory output in ${s.place} dropped ${s.percent} percent, the steepest decline in ${s.years} years.`,
        () => `Several employers announced job cuts, and shop owners warned of falling sales.`,
        () => `Rising prices have squeezed household budgets, and debt levels are climbing.`,
      ],
      neutral: [
        () => `The figures cover the three months to the end of the last quarter.`,
        (s) => `Economists expect the data to be revised when the annual survey of ${s.place} is complete.`,
        () => `The plan will be debated by the budget committee before any money is allocated.`,
      ],
    },
  },
  {
    name: 'science',
    actors: [
      'researchers at Northbridge University',
      'the national science agency',
      'the Kestrel Institute',
      'an international team of astronomers',
      'the marine biology lab',
    ],
    projects: [
      'the deep-sea survey',
      'the new telescope',
      'the fusion experiment',
      'the coral restoration study',
      'the particle detector upgrade',
    ],
    roles: ['who led the study', 'a physicist at the Kestrel Institute', 'an independent reviewer of the project'],
    sentences: {
      positive: [
        () => `The team described the findings as a breakthrough that could open up an entirely new field.`,
        (s) => `The instrument performed ${s.percent} percent better than its designers had hoped.`,
        () => `Scientists said the discovery was remarkable and praised the work of the young researchers involved.`,
      ],
      negative: [
        () => `A critical component failed during testing, and months of data may have been lost.`,
        (s) => `Funding for the work was cut by ${s.percent} percent, forcing the lab to abandon two experiments.`,
        () => `Other researchers raised serious doubts about the results and said they could not be reproduced.`,
      ],
      neutral: [
        () => `The results have been submitted to a peer-reviewed journal.`,
        (s) => `The project has been running for ${s.years} years and involves scientists from several countries.`,
        () => `The data will be made available to other research groups once it has been checked.`,
      ],
    },
  },
  {
    name: 'sport',
    actors: [
      'the city football club',
      'the national rowing team',
      'the Riverton Rangers',
      'the athletics federation',
      'the league organisers',
    ],
    projects: [
      'the championship campaign',
      'the new training centre',
      'the youth academy',
      'the stadium redevelopment',
      'the qualifying tournament',
    ],
    roles: ['the head coach', 'the team captain', 'a sports commentator'],
    sentences: {
      positive: [
        (s) => `The team has now won ${s.years + 1} matches in a row, a club record.`,
        () => `Fans celebrated in the streets long into the night after a thrilling victory.`,
        () => `The young squad delivered a superb performance that delighted supporters.`,
      ],
      negative: [
        () => `A string of injuries has left the squad struggling, and supporters are losing patience.`,
        (s) => `The side suffered a heavy defeat, its worst in ${s.years} seasons.`,
        () => `The club was fined after crowd trouble, and the manager's future is in doubt.`,
      ],
      neutral: [
        () => `The next fixture is scheduled for the weekend.`,
        (s) => `The squad has ${s.years} players under the age of twenty-one.`,
        () => `Ticket prices for the coming season are expected to be announced shortly.`,
      ],
    },
  },
  {
    name: 'health',
    actors: ['the regional health service', 'St Agnes Hospital', 'the health ministry', 'local family doctors', 'the public health board'],
    projects: [
      'the vaccination drive',
      'the new cancer screening programme',
      'the emergency department expansion',
      'the mental health service',
      'the community clinic network',
    ],
    roles: ['a senior nurse at St Agnes Hospital', "the region's chief medical officer", "a spokesperson for patients' groups"],
    sentences: {
      positive: [
        (s) => `Waiting times have fallen by ${s.percent} percent, and patients say the care has improved.`,
        () => `Doctors said the new treatment was saving lives and helping patients recover faster.`,
        (s) => `More than ${s.years} thousand people have already benefited from the scheme.`,
      ],
      negative: [
        () => `Hospitals are overcrowded, and some patients waited more than a day for a bed.`,
        (s) => `Staff shortages have worsened, with ${s.percent} percent of nursing posts unfilled.`,
        () => `An outbreak of infection forced two wards to close, and families expressed alarm.`,
      ],
      neutral: [
        () => `The service covers about half a million residents across the region.`,
        () => `Patients are advised to contact their family doctor before visiting the clinic.`,
        (s) => `An independent evaluation of the programme is due in ${s.years} months.`,
      ],
    },
  },
  {
    name: 'tech',
    actors: ['Lumen Systems', 'the startup Quillwork', 'the national cyber security centre', 'the telecom regulator', 'Vantage Robotics'],
    projects: [
      'the broadband rollout',
      'the new smartphone app',
      'the data centre project',
      'the artificial intelligence pilot',
      'the open-source platform',
    ],
    roles: ['chief technology officer at Lumen Systems', 'an industry analyst', 'a software engineer who worked on the project'],
    sentences: {
      positive: [
        (s) => `Downloads of the app grew ${s.percent} percent in its first month, far ahead of expectations.`,
        () => `Users praised the update as fast, reliable and easy to use.`,
        () => `The company said the launch was its most successful ever and is hiring more engineers.`,
      ],
      negative: [
        () => `A data breach exposed the personal details of thousands of customers.`,
        () => `The service crashed repeatedly on launch day, leaving users angry and frustrated.`,
        (s) => `The company's shares fell ${s.percent} percent after it admitted serious security flaws.`,
      ],
      neutral: [
        () => `The software will be rolled out in stages over the coming months.`,
        (s) => `The company employs about ${s.years} hundred people at its main office.`,
        () => `The regulator is expected to publish its technical assessment later.`,
      ],
    },
  },
  {
    name: 'climate',
    actors: ['the environment agency', 'the regional council', 'a coalition of climate groups', 'Greenfield Energy', 'the water authority'],
    projects: [
      'the offshore wind farm',
      'the flood defence scheme',
      'the tree planting campaign',
      'the emissions reduction plan',
      'the river clean-up project',
    ],
    roles: ['a climate scientist at Northbridge University', 'a campaigner with Green Coast', "the agency's director of operations"],
    sentences: {
      positive: [
        (s) => `Emissions in ${s.place} fell ${s.percent} percent, the largest drop on record.`,
        () => `Wildlife has returned to the restored wetlands, and volunteers hailed the progress.`,
        () => `The wind farm now supplies clean power to thousands of homes, ahead of schedule.`,
      ],
      negative: [
        () => `Severe flooding damaged hundreds of homes, and farmers lost entire harvests.`,
        (s) => `Pollution in the river reached its worst level in ${s.years} years, killing large numbers of fish.`,
        () => `The record heatwave left reservoirs dangerously low, and water restrictions were imposed.`,
      ],
      neutral: [
        () => `The scheme is funded jointly by the national government and the regional council.`,
        (s) => `Measurements are taken at ${s.years} monitoring stations along the coast.`,
        () => `A public consultation on the plans will run until the end of the season.`,
      ],
    },
  },
  {
    name: 'education',
    actors: [
      'the education department',
      'Eastvale secondary school',
      "the teachers' union",
      'the university board',
      "parents' associations",
    ],
    projects: [
      'the school building programme',
      'the new curriculum',
      'the free school meals scheme',
      'the tuition support fund',
      'the adult literacy programme',
    ],
    roles: ['a head teacher in the area', 'a parent of two pupils', "the department's education officer"],
    sentences: {
      positive: [
        (s) => `Exam results have improved for ${s.years} years running, and pupils celebrated their success.`,
        () => `Teachers said the extra support had transformed classrooms and boosted confidence.`,
        (s) => `Attendance rose ${s.percent} percent after the scheme was introduced.`,
      ],
      negative: [
        () => `Classes were cancelled after a roof collapsed, and parents said the building was unsafe.`,
        (s) => `A shortage of teachers has left ${s.percent} percent of schools struggling to cover lessons.`,
        () => `Students protested against rising fees and warned that many would drop out.`,
      ],
      neutral: [
        () => `The new timetable will apply from the start of the next school year.`,
        (s) => `There are ${s.years} schools in the district taking part in the programme.`,
        () => `Applications for places close at the end of the month.`,
      ],
    },
  },
  {
    name: 'transport',
    actors: ['the rail operator', 'the transport authority', 'Coastline Buses', 'the airport management', 'the highways agency'],
    projects: [
      'the new tram line',
      'the bridge repairs',
      'the cycle lane network',
      'the airport terminal extension',
      'the electric bus fleet',
    ],
    roles: ['a spokesperson for the rail operator', 'who commutes daily into the city', "chair of the passengers' association"],
    sentences: {
      positive: [
        (s) => `Journey times have been cut by ${s.percent} percent, and commuters welcomed the change.`,
        () => `The new line opened on time and under budget, a rare success for the region.`,
        () => `Passenger numbers reached a record high, and satisfaction scores improved sharply.`,
      ],
      negative: [
        () => `Thousands of passengers were stranded after a signal failure brought services to a halt.`,
        (s) => `Repair costs have doubled, and the work is now ${s.years} years behind schedule.`,
        () => `A serious accident on the motorway has renewed complaints about dangerous road conditions.`,
      ],
      neutral: [
        () => `The revised timetable takes effect next month.`,
        (s) => `The route is about ${s.years} kilometres long and serves twelve stations.`,
        () => `Passengers can check the latest service information on the operator's website.`,
      ],
    },
  },
];

export const TITLES: Readonly<Record<Tone, readonly Template[]>> = {
  positive: [
    (s) => `${s.Actor} hails success of ${s.project}`,
    (s) => `${s.place} celebrates as ${s.project} beats expectations`,
    (s) => `${s.Project} delivers strong early results in ${s.place}`,
    (s) => `Record gains for ${s.place} after ${s.project}`,
    (s) => `${s.Actor} praised for bold approach to ${s.project}`,
  ],
  negative: [
    (s) => `${s.Actor} under fire as ${s.project} stalls`,
    (s) => `Fears grow in ${s.place} over ${s.project}`,
    (s) => `${s.Project} hit by delays and rising costs`,
    (s) => `${s.place} counts losses after ${s.project} falls short`,
    (s) => `Critics warn ${s.project} is failing ${s.place}`,
  ],
  neutral: [
    (s) => `${s.Actor} to review ${s.project}`,
    (s) => `What we know about ${s.project}`,
    (s) => `${s.place} sets date for decision on ${s.project}`,
    (s) => `${s.Actor} publishes report on ${s.project}`,
    (s) => `Officials in ${s.place} outline timetable for ${s.project}`,
  ],
};

export const LEADS: Readonly<Record<Tone, readonly Template[]>> = {
  positive: [
    (s) => `${s.Actor} said on ${s.day} that ${s.project} had exceeded its targets, bringing welcome relief to ${s.place}.`,
    (s) => `${s.place} recorded a ${s.percent} percent improvement after ${s.project}, the best result in ${s.years} years.`,
    (s) => `There was celebration in ${s.place} on ${s.day} as ${s.project} proved a clear success.`,
  ],
  negative: [
    (s) => `${s.Actor} faced sharp criticism on ${s.day} after ${s.project} fell badly behind schedule in ${s.place}.`,
    (s) => `Residents of ${s.place} reacted with anger as ${s.project} was hit by a ${s.percent} percent budget overrun.`,
    (s) => `Concerns deepened on ${s.day} after ${s.project} suffered its worst setback in ${s.years} years.`,
  ],
  neutral: [
    (s) => `${s.Actor} confirmed on ${s.day} that ${s.project} will be reviewed over the coming months.`,
    (s) => `Officials in ${s.place} published details of ${s.project} on ${s.day}.`,
    (s) => `${s.Project} was discussed at a public meeting in ${s.place} on ${s.day}.`,
  ],
};

export const QUOTES: Readonly<Record<Tone, readonly Template[]>> = {
  positive: [
    (s) => `"This is a genuine turning point for ${s.place}," said ${s.person}, ${s.role}.`,
    (s) => `"The results speak for themselves, and we are delighted," said ${s.person}, ${s.role}.`,
    (s) => `"People can see a real improvement in their daily lives," said ${s.person}, ${s.role}.`,
  ],
  negative: [
    (s) => `"Frankly, this is a failure that families in ${s.place} will pay for," said ${s.person}, ${s.role}.`,
    (s) => `"We warned about these risks and nobody listened," said ${s.person}, ${s.role}.`,
    (s) => `"The situation is worse than anyone expected," said ${s.person}, ${s.role}.`,
  ],
  neutral: [
    (s) => `"We will study the figures carefully before drawing conclusions," said ${s.person}, ${s.role}.`,
    (s) => `"It is too early to say what the long-term effect will be," said ${s.person}, ${s.role}.`,
    (s) => `"Our next step is to consult with residents," said ${s.person}, ${s.role}.`,
  ],
};

export const CLOSINGS: readonly Template[] = [
  (s) => `A further update is expected ${s.when}.`,
  (s) => `The full report will be published ${s.when}.`,
  (s) => `${s.Actor} did not respond to a request for further comment.`,
  (s) => `Officials said more details would be released ${s.when}.`,
];

export const PLACES = [
  'Riverton',
  'Port Aldine',
  'Northbridge',
  'Lakemoor',
  'Eastvale',
  'Kingsford',
  'Marlow Bay',
  'Ashby Green',
  'Hollins Vale',
  'Westcliff',
];
export const PEOPLE = [
  'Amara Lindqvist',
  'Daniel Osei',
  'Priya Natarajan',
  'Tomás Herrera',
  'Helen Whitcombe',
  'Kenji Moriyama',
  'Fatima Al-Sayed',
  'Lukas Brenner',
  'Grace Mbeki',
  'Owen Fairley',
];
export const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
export const WHENS = ['next week', 'later this month', 'in the spring', 'before the end of the year'];
export const SOURCES = ['The Daily Ledger', 'Northbridge Herald', 'Coastal Wire', 'Metro Observer', 'The Evening Dispatch', 'Valley Times'];
export const SOURCE_SLUGS = SOURCES.map((source) => source.toLowerCase().replace(/^the /, '').replaceAll(' ', '-'));
// Out of 10: positive 4, negative 4, neutral 2 — neutral stories are the rarest in real feeds.
export const TONE_BY_TENTH: readonly Tone[] = [
  'positive',
  'positive',
  'positive',
  'positive',
  'negative',
  'negative',
  'negative',
  'negative',
  'neutral',
  'neutral',
];
